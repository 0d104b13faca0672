"""Native GPU execution through wgpu-py: the planner (twin of backends-js/src/planner.mjs),
the adapter policy, the executor with replayed sessions, and `gpulab doctor`.

Importing this package does not import wgpu or touch a GPU: the adapter is probed when the host
opens the executor for its first graph.
"""
