#!/bin/sh
# National Compute's setup script, as National Compute in a box serves it:
#   curl -fsSL <access>/setup.sh | sh -s -- <cluster>
# It reads the token from ~/.config/nationalcompute/token (or NC_TOKEN) and asks the box which kind of
# cluster <cluster> is. Kubernetes: the kubeconfig by token in ~/.kube/<cluster>.yaml, a <cluster> context
# merged into ~/.kube/config, then one sign-in link printed (no terminal is needed: sign-in polls in the
# background). Slurm: a slurm-login command in ~/.local/bin that gets the 24-hour ssh certificate from the box.
# The box's script installs nothing from the network: where kubectl is missing it says so and where to get it.
set -eu

API=@API@
SSH_CONFIG=@SSH_CONFIG@
KUBECTL_HELP="https://kubernetes.io/docs/tasks/tools/"

say() { printf 'setup: %s\n' "$*"; }
die() {
    printf 'setup: %s\n' "$*" >&2
    exit 1
}

command -v curl >/dev/null 2>&1 || die "curl is not installed here; this script needs it."
if [ -n "${NC_TOKEN:-}" ]; then
    TOKEN=$NC_TOKEN
elif [ -r "$HOME/.config/nationalcompute/token" ]; then
    TOKEN=$(cat "$HOME/.config/nationalcompute/token")
else
    die "no token: save it at ~/.config/nationalcompute/token (or set NC_TOKEN)."
fi

# The token goes to curl on its stdin, never on a command line (where ps shows it).
api() { printf 'Authorization: Bearer %s\n' "$TOKEN" | curl -fsS -H @- "$@"; }

WHO=$(api "$API/api/whoami") || die "the service refused the token (GET $API/api/whoami)."
CLUSTERS=$(printf '%s\n' "$WHO" | grep -o '"name": *"[^"]*", *"kind": *"[^"]*"' |
    sed 's/"name": *"\([^"]*\)", *"kind": *"\([^"]*\)"/\1 \2/') || CLUSTERS=""
NAMES=$(printf '%s\n' "$CLUSTERS" | cut -d' ' -f1 | tr '\n' ' ' | sed 's/ *$//')

CLUSTER=${1:-}
if [ -z "$CLUSTER" ]; then
    case $NAMES in
    "") die "your organization has no cluster: there is nothing to set up." ;;
    *" "*) die "name the cluster: curl -fsSL …/setup.sh | sh -s -- <cluster> (yours: $NAMES)." ;;
    *) CLUSTER=$NAMES ;;
    esac
fi
case $CLUSTER in
*[!A-Za-z0-9._-]*) die "'$CLUSTER' is not a cluster name." ;;
esac
KIND=$(printf '%s\n' "$CLUSTERS" | awk -v c="$CLUSTER" '$1 == c { print $2; exit }')
[ -n "$KIND" ] || die "no cluster named $CLUSTER in your organization (yours: ${NAMES:-none})."

kubernetes() {
    mkdir -p "$HOME/.kube"
    umask 077
    FILE="$HOME/.kube/$CLUSTER.yaml"
    CONFIG="$HOME/.kube/config"
    api "$API/api/k8s/cluster/kubeconfig?cluster=$CLUSTER" -o "$FILE.tmp" ||
        die "the kubeconfig of $CLUSTER could not be fetched."
    mv "$FILE.tmp" "$FILE"
    say "wrote the kubeconfig of $CLUSTER to ~/.kube/$CLUSTER.yaml"
    if ! command -v kubectl >/dev/null 2>&1; then
        if [ ! -e "$CONFIG" ]; then
            cp "$FILE" "$CONFIG"
            say "wrote it as ~/.kube/config too (there was none): context $CLUSTER"
        else
            say "~/.kube/config is unchanged: merging needs kubectl. Once it is installed, run this script again."
        fi
        say "kubectl is not installed here, and this script installs nothing: get it from $KUBECTL_HELP"
        say "then sign in with: kubectl --context $CLUSTER get nodes (it prints the sign-in link)"
        return 0
    fi
    if [ -e "$CONFIG" ]; then # the old entries of this cluster go; the rest (and the current context) stay
        cp "$CONFIG" "$CONFIG.old.tmp"
        for what in "context $CLUSTER" "cluster $CLUSTER" "user $CLUSTER-user"; do
            # shellcheck disable=SC2086  # (two words: the kind of entry and its name)
            KUBECONFIG="$CONFIG.old.tmp" kubectl config delete-$what </dev/null >/dev/null 2>&1 || true
        done
        # (stderr apart: a kubectl that first asks the current context's server for its version may sign in there)
        KUBECONFIG="$CONFIG.old.tmp:$FILE" kubectl config view --flatten </dev/null >"$CONFIG.new.tmp" \
            2>"$CONFIG.err.tmp" || die "kubectl could not merge ~/.kube/$CLUSTER.yaml into ~/.kube/config (left as" \
            "it was): $(tail -n 2 "$CONFIG.err.tmp")"
        mv "$CONFIG.new.tmp" "$CONFIG"
        rm -f "$CONFIG.old.tmp" "$CONFIG.err.tmp"
    else
        cp "$FILE" "$CONFIG"
    fi
    say "merged the context $CLUSTER into ~/.kube/config (name it on every call: kubectl --context $CLUSTER …)"
    # The first call signs in. Without a terminal (stdin is never this script's pipe) the sign-in plugin prints
    # its link and exits while a background process polls; with a credential already cached it just answers.
    if OUT=$(kubectl --context "$CLUSTER" get nodes </dev/null 2>&1); then
        say "signed in already: kubectl --context $CLUSTER get nodes answers."
        return 0
    fi
    LINK=$(printf '%s\n' "$OUT" | grep -o 'https\{0,1\}://[^ ]*/device?code=[A-Za-z0-9-]*' | head -n 1) || LINK=""
    [ -n "$LINK" ] || die "kubectl --context $CLUSTER get nodes failed: $(printf '%s' "$OUT" | tail -n 3)"
    say "sign in: hand this link to your human, who opens it and approves once:"
    printf '\n    %s\n\n' "$LINK"
    say "sign-in polls in the background; once approved, kubectl --context $CLUSTER get nodes answers."
}

slurm() {
    BIN="$HOME/.local/bin"
    mkdir -p "$BIN"
    {
        printf '#!/bin/sh\n'
        printf '# slurm-login for %s (National Compute in a box): a 24-hour ssh certificate from the box.\n' "$CLUSTER"
        printf 'set -eu\nAPI=%s\nCLUSTER=%s\nSSH_CONFIG=%s\n' "'$API'" "'$CLUSTER'" "'$SSH_CONFIG'"
        cat <<'EOF'
if [ -n "${NC_TOKEN:-}" ]; then
    TOKEN=$NC_TOKEN
elif [ -r "$HOME/.config/nationalcompute/token" ]; then
    TOKEN=$(cat "$HOME/.config/nationalcompute/token")
else
    echo "slurm-login: no token: save it at ~/.config/nationalcompute/token (or set NC_TOKEN)." >&2
    exit 1
fi
OUT=$(printf 'Authorization: Bearer %s\n' "$TOKEN" | curl -fsS -H @- -H 'content-type: application/json' \
    -X POST -d "{\"cluster\":\"$CLUSTER\"}" "$API/_sim/slurm/login") || {
    echo "slurm-login: the box refused to sign a certificate for $CLUSTER." >&2
    exit 1
}
field() { printf '%s\n' "$OUT" | sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p"; }
echo "slurm-login: signed in to $CLUSTER as $(field user) for 24 hours (until $(field valid_before))."
echo "slurm-login: the certificate is in $(field certificate_file); log in with: ssh -F $SSH_CONFIG $CLUSTER"
EOF
    } >"$BIN/slurm-login.tmp"
    chmod 755 "$BIN/slurm-login.tmp"
    mv "$BIN/slurm-login.tmp" "$BIN/slurm-login"
    say "installed slurm-login in ~/.local/bin: it gets a 24-hour ssh certificate for $CLUSTER from the box."
    case ":$PATH:" in
    *":$BIN:"*) ;;
    *) say "~/.local/bin is not on your PATH: export PATH=\"\$HOME/.local/bin:\$PATH\"" ;;
    esac
    say "next: slurm-login, then ssh -F $SSH_CONFIG $CLUSTER"
}

case $KIND in
kubernetes) kubernetes ;;
slurm) slurm ;;
*) say "$CLUSTER is a $KIND cluster: there is nothing to set up (its nodes arrive as ssh hosts)." ;;
esac
