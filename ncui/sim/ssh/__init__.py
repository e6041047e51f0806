"""The box's ssh hosts: VM nodes as real ssh endpoints (asyncssh), each running a small simulated node.

``SshHub`` (hub.py) serves every granted node on its own 127.x address and a free port, with its own host
key, the keys installed at grant, SFTP on a scratch folder, and an ssh_config for OpenSSH's own clients;
``node.py`` is the node itself: a tiny command interpreter over containers driven by the box's clock.
"""

from .hub import SshHub

__all__ = ["SshHub"]
