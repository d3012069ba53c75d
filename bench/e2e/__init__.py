"""``make bench-e2e``: multisched and kube-scheduler side by side on one real kube-apiserver.

Both schedulers run as their users run them (``multisched run``, the ``kube-scheduler`` binary)
against the same etcd + kube-apiserver on loopback, each on its own pods, one after the other,
so their figures come from the same data and the same machine.
"""
