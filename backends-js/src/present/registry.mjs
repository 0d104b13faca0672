// Presenters: how each backend draws a prepared session's kept output on a canvas, registered
// by backend name (the kernel registry's pattern: no switch on backend names). A presenter
// opens a Surface on an OffscreenCanvas; the surface draws one node of a program per call.
import { GpuLabError } from '../errors.mjs';

/**
 * @typedef {{width: number, height: number, dtype: string,
 *   colouring: import('./colors.mjs').Colouring}} View  the tensor [height, width] drawn
 * @typedef {{draw(program: any, id: number): Promise<void>, close(): void,
 *   readsBack: boolean}} Surface  readsBack: whether a frame copies the tensor to the CPU
 * @typedef {{open(program: any, canvas: OffscreenCanvas, view: View): Surface|Promise<Surface>}} Presenter
 */

/** @type {Map<string, Presenter>} */
const PRESENTERS = new Map();

/** @param {string} backend @param {Presenter} presenter */
export function registerPresenter(backend, presenter) {
  PRESENTERS.set(backend, presenter);
}

/** @param {string} backend */
export function hasPresenter(backend) {
  return PRESENTERS.has(backend);
}

/**
 * The presenter of `backend`, or UNSUPPORTED naming the backends that have one.
 * @param {string} backend
 */
export function presenterFor(backend) {
  const presenter = PRESENTERS.get(backend);
  if (!presenter) {
    throw new GpuLabError('UNSUPPORTED', `backend ${backend} cannot draw a live view (backends ` +
      `that can: ${[...PRESENTERS.keys()].join(', ')})`);
  }
  return presenter;
}
