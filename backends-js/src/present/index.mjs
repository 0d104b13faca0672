// Live views of prepared sessions: every backend's presenter registered (see registry.mjs).
import './webgpu.mjs';
import './webgl2.mjs';
import './readback.mjs';

export { hasPresenter, presenterFor, registerPresenter } from './registry.mjs';
export { colouring, colourOf } from './colors.mjs';
