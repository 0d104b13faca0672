"""The playground server's parts: the pylib wheel, the offline Pyodide index, `/api/execute`."""
