//! One Game of Life step on a toroidal grid: a cell is alive when > 0.5; the result is 1 or 0.

#[no_mangle]
pub unsafe extern "C" fn life(a: *const f32, out: *mut f32, h: usize, w: usize) {
    let alive = |r: usize, c: usize| (*a.add(r * w + c) > 0.5) as u32;
    for r in 0..h {
        let (up, down) = ((r + h - 1) % h, (r + 1) % h);
        for c in 0..w {
            let (left, right) = ((c + w - 1) % w, (c + 1) % w);
            let n = alive(up, left) + alive(up, c) + alive(up, right) + alive(r, left) + alive(r, right)
                + alive(down, left) + alive(down, c) + alive(down, right);
            let next = n == 3 || (n == 2 && alive(r, c) == 1);
            *out.add(r * w + c) = if next { 1.0 } else { 0.0 };
        }
    }
}
