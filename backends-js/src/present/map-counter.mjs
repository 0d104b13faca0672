// A test hook: count every GPUBuffer map (mapAsync, getMappedRange) made in this scope, by
// wrapping the prototype once. A live view on WebGPU must make none (tests read the counts).

const KEY = Symbol.for('gpulab.mapCounter');

/**
 * Install (once) and return the live counts, or null where there is no WebGPU.
 * @param {any} [scope] @returns {{mapAsync: number, getMappedRange: number}|null}
 */
export function countBufferMaps(scope = globalThis) {
  const proto = scope.GPUBuffer?.prototype;
  if (!proto) return null;
  if (proto[KEY]) return proto[KEY];
  const counts = { mapAsync: 0, getMappedRange: 0 };
  for (const name of /** @type {const} */ (['mapAsync', 'getMappedRange'])) {
    const original = proto[name];
    proto[name] = function counted(...args) {
      counts[name] += 1;
      return original.apply(this, args);
    };
  }
  Object.defineProperty(proto, KEY, { value: counts });
  return counts;
}
