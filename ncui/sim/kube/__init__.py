"""A Kubernetes API for the simulated clusters, good enough for the real kubectl and the Python client.

``mount_kube(app, world)`` serves every cluster of the World's organization at ``/k8s/<cluster>``, plus
the kubectl sign-in's device-code endpoints and a few ``/_sim/k8s`` controls.
"""

from .routes import Kube, mount_kube

__all__ = ["Kube", "mount_kube"]
