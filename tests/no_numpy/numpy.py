"""Put first on PYTHONPATH, this makes `import numpy` fail as on a machine without numpy."""
raise ImportError("numpy is hidden for this test")
