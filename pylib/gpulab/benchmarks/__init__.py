"""Native benchmarks behind `gpulab bench` (the browser pages live in bench/)."""
