"""The package list and package data of the gpulab wheel (the metadata is in pyproject.toml).

The conformance suite and the JS runtime live outside pylib/ in the checkout (e2e/conformance/,
backends-js/, kernels/), each file in one place. The wheel maps those folders in as packages,
so `gpulab conformance` runs from an installed package without a copy of any source:

- gpulab.conformance       <- e2e/conformance (the runner, the corpus, the page, node executor)
- gpulab.jsruntime         <- backends-js (package.json and src/: the gpu-lab npm layout)
- gpulab.jsruntime.kernels <- kernels (ops.json, kernels.wasm, wgsl/, glsl/; not the generator)

The JS folders are declared as (data-only) packages so setuptools ships their files by name.
"""

from setuptools import find_namespace_packages, setup

MAPPED = {
    "gpulab.conformance": "e2e/conformance",
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
        *find_namespace_packages("pylib", include=["gpulab", "gpulab.*"]),
        *MAPPED,
        *JS_SRC,
        "gpulab.jsruntime.kernels.wgsl",
        "gpulab.jsruntime.kernels.glsl",
    ],
    package_dir={"": "pylib", **MAPPED},
    package_data=PACKAGE_DATA,
)
