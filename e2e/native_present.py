"""The live view's native path, for tests: a native wgpu session's kept output drawn
by the same render shader as the browser's WebGPU presenter (backends-js/src/present/
present.wgsl: the same bytes) into an offscreen rgba8unorm texture, read back as pixels or PNG.

    session = host.prepare(graph, carry={0: "board"}, backend="wgpu", allow_software=True)
    session.run_steps(8)
    rgba = render(session, "board", palette=True)     # [height, width, 4] uint8
    png = png_bytes(rgba)

The render reads the session's device buffer (no read-back of the tensor); only the finished
image is copied out, which is the point here (a test or a PNG). Colours follow colors.mjs.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHADER = ROOT / "backends-js" / "src" / "present" / "present.wgsl"
WORD_KIND = {"float32": 0, "int32": 1, "uint32": 2, "bool": 2}  # as webgpu.mjs
FORMAT = "rgba8unorm"


def _device_buffer(session: Any, output: str) -> tuple[Any, Any, Any]:
    """(device, buffer holding the output now, its node) of a native wgpu session."""
    plan = session._plan
    node_id = plan.names.get(output)
    if node_id is None or node_id not in plan.keep_ids:
        raise ValueError(f"{output!r} is not a kept (resident or carried) output")
    program = session._program
    buffer = program._buffers[program._physical(program._buffer_id(node_id))]
    return program._ex.device, buffer, plan.checked.by_id[node_id]


def _pipeline(device: Any) -> Any:
    import wgpu

    module = device.create_shader_module(code=SHADER.read_text(encoding="utf-8"))
    return device.create_render_pipeline(
        layout=wgpu.AutoLayoutMode.auto,
        vertex={"module": module, "entry_point": "vs"},
        fragment={"module": module, "entry_point": "fs", "targets": [{"format": FORMAT}]},
        primitive={"topology": "triangle-list"},
    )


def render(
    session: Any,
    output: str,
    palette: bool | None = None,
    vmin: float = 0.0,
    vmax: float = 1.0,
    pipeline: Any = None,
) -> np.ndarray:
    """One frame of `output` as RGBA pixels [height, width, 4] (one pixel per element)."""
    import wgpu

    device, buffer, node = _device_buffer(session, output)
    height, width = node.shape
    dtype = getattr(node, "dtype", None) or "float32"
    use_palette = dtype != "float32" if palette is None else palette
    view = struct.pack(
        "<4I2f8x", width, height, WORD_KIND[dtype], 0 if use_palette else 1, vmin, vmax
    )
    uniform = device.create_buffer_with_data(data=view, usage=wgpu.BufferUsage.UNIFORM)
    pipeline = pipeline or _pipeline(device)
    group = device.create_bind_group(
        layout=pipeline.get_bind_group_layout(0),
        entries=[
            {"binding": 0, "resource": {"buffer": buffer, "offset": 0, "size": 4 * width * height}},
            {"binding": 1, "resource": {"buffer": uniform, "offset": 0, "size": len(view)}},
        ],
    )
    texture = device.create_texture(
        size=(width, height, 1),
        format=FORMAT,
        usage=wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC,
    )
    encoder = device.create_command_encoder()
    rp = encoder.begin_render_pass(
        color_attachments=[
            {
                "view": texture.create_view(),
                "load_op": "clear",
                "store_op": "store",
                "clear_value": (0, 0, 0, 1),
            }
        ]
    )
    rp.set_pipeline(pipeline)
    rp.set_bind_group(0, group)
    rp.draw(3)
    rp.end()
    device.queue.submit([encoder.finish()])
    row = (4 * width + 255) // 256 * 256  # copies need rows padded to 256 bytes
    data = device.queue.read_texture(
        {"texture": texture, "origin": (0, 0, 0), "mip_level": 0},
        {"offset": 0, "bytes_per_row": row, "rows_per_image": height},
        (width, height, 1),
    )
    pixels = np.frombuffer(bytes(data), np.uint8)
    if pixels.size == row * height:
        pixels = pixels.reshape(height, row)[:, : 4 * width]
    texture.destroy()
    uniform.destroy()
    return pixels.reshape(height, width, 4).copy()


def png_bytes(rgba: np.ndarray) -> bytes:
    """An RGBA image as a PNG file (filter 0 on every row)."""
    height, width, _ = rgba.shape
    raw = b"".join(b"\x00" + rgba[y].tobytes() for y in range(height))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body))
            + kind
            + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )
