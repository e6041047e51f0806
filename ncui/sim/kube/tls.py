"""A self-signed certificate for the simulator's HTTPS listener.

kubectl (client-go) sends credentials, exec plugin included, only to an ``https://`` server, so the
Kubernetes API is also served over TLS; the kubeconfig pins this certificate as its authority.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone


@dataclass(frozen=True)
class KubeTLS:
    url: str  # https://host:port (no path)
    ca_pem: bytes


def self_signed(host: str) -> tuple[bytes, bytes]:
    """(certificate PEM, private key PEM) for ``host``, 127.0.0.1 and localhost."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ncui-sim-kube")])
    sans: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    try:
        ip = ipaddress.ip_address(host)
        if str(ip) != "127.0.0.1":
            sans.append(x509.IPAddress(ip))
    except ValueError:
        sans.append(x509.DNSName(host))
    now = datetime.now(timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=3650))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return (
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )
