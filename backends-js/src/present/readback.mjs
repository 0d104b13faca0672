// The wasm and cpu presenter: their tensors live in this thread's memory, so a frame is the
// output's values (program.download) coloured into an ImageData and put on a 2-D canvas.
import { fillPixels } from './colors.mjs';
import { registerPresenter } from './registry.mjs';

/** @type {import('./registry.mjs').Presenter} */
const readbackPresenter = {
  open(_program, canvas, view) {
    canvas.width = view.width;
    canvas.height = view.height;
    const ctx = /** @type {OffscreenCanvasRenderingContext2D} */ (canvas.getContext('2d'));
    const image = new ImageData(view.width, view.height);
    return {
      readsBack: true,
      async draw(program, id) {
        const data = await program.download(id);
        fillPixels(data, view.colouring, image.data);
        ctx.putImageData(image, 0, 0);
      },
      close() {},
    };
  },
};

registerPresenter('wasm', readbackPresenter);
registerPresenter('cpu', readbackPresenter);
