"""The box's ssh hosts: VM nodes, a Slurm login node and a research node as real ssh endpoints (asyncssh).

``SshHub`` (hub.py) serves every host on its own 127.x address and a free port, with its own host key, the
keys (or, on a login node, the certificates) it accepts, SFTP (scp) and rsync on a scratch folder, and an
ssh_config for OpenSSH's own clients; ``node.py`` is a node itself: a tiny command interpreter over containers
driven by the box's clock; ``slurm.py`` extends it into a login node with Slurm's commands.
"""

from .hub import SshHub

__all__ = ["SshHub"]
