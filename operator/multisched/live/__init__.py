"""The live cluster as the engine's input: ``explain``, ``snapshot``, ``simulate --from-cluster``.

Reads only (LIST through the informers' list code); nothing here writes to the cluster. Sits
beside ``operator`` in the import order: it may use scheduler, config and informer. Modules
are imported where used, so offline ``simulate`` does not load the API client.
"""
