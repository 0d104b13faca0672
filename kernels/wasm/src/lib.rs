//! GPU Lab WebAssembly kernels: one exported function per protocol op (or op family).
//!
//! `no_std`, no allocator: JavaScript owns linear memory. It allocates every tensor above
//! `__heap_base` and passes byte offsets (`*const f32`) plus sizes. All tensors are float32,
//! row-major. Numerics follow docs/protocol.md: the 64-lane reduction order, ascending-k
//! matmul accumulation without contraction, bit-exact masks and copies.
#![no_std]

#[macro_use]
mod elementwise;
mod extremes;
mod index;
mod layout;
mod life;
mod maps;
mod math;
mod matmul;
mod optim;
mod quant;
mod reduce;
mod select;
mod softmax;
mod vec;
mod window;

/// A kernel never panics on inputs the JS side validated; if one does, trap instead of
/// unwinding (there is nothing to unwind into).
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}

/// Version of the kernel ABI; the JS loader refuses a kernels.wasm with another one.
#[no_mangle]
pub extern "C" fn abi_version() -> u32 {
    1
}
