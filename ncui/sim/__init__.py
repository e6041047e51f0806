"""National Compute in a box: the service, its market and a Kubernetes API, simulated on loopback.

Plain Python (no Textual). ``SimServer`` runs it in a background thread; ``ncui sim`` runs it alone.
"""
