"""The package list and package data of the gpulab wheel (the metadata is in pyproject.toml).

The wheel is the checkout's pylib/gpulab (the conformance suite included: gpulab.conformance)
plus the JS runtime, which lives at the repository root because it is also the npm package
`gpu-lab`. The wheel maps those folders in, each file in one place, so `gpulab conformance`
runs the node and browser lanes from an installed package:

- gpulab.jsruntime         <- backends-js (package.json and src/: the gpu-lab npm layout)
- gpulab.jsruntime.kernels <- kernels (ops.json, kernels.wasm, wgsl/, glsl/)

gpulab.codegen (`make gen`) is build tooling of the checkout and stays out of the wheel. The
checkout's pylib/gpulab/ops.json, kernels/ops.json and kernels/wgsl are symbolic links to the
one source of each; the build copies what they point to.
"""

from setuptools import find_namespace_packages, setup

MAPPED = {
    "gpulab.jsruntime": "backends-js",
    "gpulab.jsruntime.kernels": "kernels",
}


def data_packages(parent: str, folder: str, top: str) -> list[str]:
    """`top` under `folder` and its subfolders, as subpackages of `parent`."""
    found = find_namespace_packages(folder, include=[top, f"{top}.*"])
    return [f"{parent}.{name}" for name in found]


JS_SRC = data_packages("gpulab.jsruntime", "backends-js", "src")
PACKAGE_DATA = {
    "gpulab": ["ops.json", "kernels/ops.json", "kernels/wgsl/*.wgsl"],
    "gpulab.onnx": ["data/*.onnx", "data/*.json"],
    "gpulab.conformance": ["*.json", "*.html", "*.mjs", "README.md"],
    "gpulab.jsruntime": ["package.json"],
    **{name: ["*.mjs", "*.json"] for name in JS_SRC},
    "gpulab.jsruntime.kernels": ["ops.json", "kernels.wasm"],
    "gpulab.jsruntime.kernels.wgsl": ["*.wgsl"],
    "gpulab.jsruntime.kernels.glsl": ["*.glsl"],
}

setup(
    packages=[
        *find_namespace_packages(
            "pylib", include=["gpulab", "gpulab.*"], exclude=["gpulab.codegen", "gpulab.kernels.wgsl.*"]
        ),
        *MAPPED,
        *JS_SRC,
        "gpulab.jsruntime.kernels.wgsl",
        "gpulab.jsruntime.kernels.glsl",
    ],
    package_dir={"": "pylib", **MAPPED},
    package_data=PACKAGE_DATA,
)
