#!/usr/bin/env bash
# Builds kernels/kernels.wasm from the no_std crate kernels/wasm with Debian's /usr/bin/rustc
# (fixed flags, paths remapped, symbols stripped: the output is the same bytes on every machine
# with that rustc). `--check` rebuilds into a temporary directory and fails unless the bytes
# equal the committed kernels/kernels.wasm; it prints both sha256 sums. CI runs the check.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CRATE="$ROOT/kernels/wasm"
TARGET="$ROOT/kernels/kernels.wasm"
RUSTC="${GPULAB_WASM_RUSTC:-/usr/bin/rustc}"
EXPECTED_RUSTC="rustc 1.63.0"

build() {  # build <output path>
  (cd "$CRATE" && "$RUSTC" --edition 2021 --crate-type cdylib --crate-name gpulab_kernels \
    --target wasm32-unknown-unknown \
    -C opt-level=3 -C target-feature=+simd128 -C panic=abort -C codegen-units=1 \
    -C debuginfo=0 -C strip=symbols -C link-arg=-zstack-size=131072 \
    --remap-path-prefix="$CRATE=." \
    src/lib.rs -o "$1")
}

if [ ! -x "$RUSTC" ]; then
  echo "build-wasm: $RUSTC not found (apt-get install rustc libstd-rust-dev-wasm32; make setup does)" >&2
  exit 2
fi
version="$("$RUSTC" --version)"
if [ "${version#"$EXPECTED_RUSTC"}" = "$version" ]; then
  echo "build-wasm: warning: $version is not $EXPECTED_RUSTC; bytes may differ from the committed build" >&2
fi

if [ "${1:-}" = "--check" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  build "$tmp/kernels.wasm"
  want="$(sha256sum < "$TARGET" | cut -d' ' -f1)"
  got="$(sha256sum < "$tmp/kernels.wasm" | cut -d' ' -f1)"
  echo "committed kernels/kernels.wasm  sha256 $want"
  echo "rebuilt  ($version)  sha256 $got"
  if cmp -s "$TARGET" "$tmp/kernels.wasm"; then
    echo "build-wasm --check: OK, bit-identical"
  else
    echo "build-wasm --check: FAIL, kernels/kernels.wasm is not the build of kernels/wasm/src;" \
      "run scripts/build-wasm.sh and commit the result" >&2
    exit 1
  fi
else
  build "$TARGET"
  echo "wrote kernels/kernels.wasm ($(wc -c < "$TARGET") bytes) sha256 $(sha256sum < "$TARGET" | cut -d' ' -f1)"
fi
