// One Game of Life step on a toroidal [H, W] grid: alive when > 0.5 (NaN is dead); the output
// is 1 for a live cell and 0 otherwise.
uniform sampler2D u_a;
uniform ivec2 u_hw;

float kernel(int i) {
  int h = u_hw.x;
  int w = u_hw.y;
  int y = i / w;
  int x = i - y * w;
  int count = 0;
  for (int dy = -1; dy <= 1; ++dy) {
    for (int dx = -1; dx <= 1; ++dx) {
      if (dx == 0 && dy == 0) continue;
      int yy = (y + dy + h) % h;
      int xx = (x + dx + w) % w;
      if (load(u_a, yy * w + xx) > 0.5) count += 1;
    }
  }
  bool alive = load(u_a, i) > 0.5;
  return (count == 3 || (alive && count == 2)) ? 1.0 : 0.0;
}
