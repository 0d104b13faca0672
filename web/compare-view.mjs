// The compare panel under a cell: both backends, a per-output table of the max ulp difference,
// and the two results side by side.
import { compareResults, runNative, toNumber, toleranceOf } from './compare.mjs';
import { el, formatFloat32, tensorTable } from './render.mjs';

function describeBrowser(result) {
  const s = result.stats ?? {};
  const adapter = s.adapter?.description ? ` (${s.adapter.description})` : '';
  return `${result.backend}${adapter}${s.software ? ', software adapter' : ''}`;
}

/** "cpu-python (no hardware GPU: …)": the native backend and, in short, why not the GPU. */
function describeNative(result) {
  const s = result.stats ?? {};
  const adapter = s.adapter?.description ?? s.adapter?.device ?? '';
  const parts = [result.backend];
  if (adapter) parts.push(`(${adapter})`);
  if (s.software) parts.push('software adapter');
  if (s.fallback) parts.push(`— ${s.fallback}`);
  const refused = (s.attempts ?? []).filter((a) => !a.ok);
  if (refused.length) {
    const first = `${refused[0].backend}: ${refused[0].reason}`;
    parts.push(`— no hardware GPU (${first.length > 90 ? `${first.slice(0, 90)}…` : first})`);
  }
  return { text: parts.join(' '), detail: refused.map((a) => `${a.backend}: ${a.reason}`).join('\n') };
}

function verdict(row) {
  if (row.error) return el('span', { class: 'differ', text: row.error });
  if (row.maxUlps === 0) return el('span', { class: 'agree', text: '0 ulps (bit-identical)' });
  const ulps = Number.isFinite(row.maxUlps) ? `${row.maxUlps} ulp${row.maxUlps === 1 ? '' : 's'}` : 'NaN mismatch';
  return el('span', { class: 'differ', text: `${ulps} (at index ${row.worstIndex})` });
}

/**
 * What the protocol allows for this output: its op's tolerance class and ulp bound. Classes
 * with a scale term (reductions, matmul) also allow an error relative to the terms' size.
 */
function toleranceNote(row) {
  const tol = toleranceOf(row.graph, row.name);
  if (!tol) return '';
  const scale = tol.cls.scale_eps ? ' + a scale term' : '';
  return `${tol.op}: ${tol.tolerance} (≤ ${tol.cls.ulps} ulps${scale})`;
}

/** Pass/fail under the protocol tolerance, as the conformance runner judges. */
function judgement(row) {
  if (row.passed === undefined) return el('span', { class: 'differ', text: row.error ? 'fail' : '—' });
  const note = row.scaleUnknown ? ' (scale term not known in the page: judged without it, stricter than the runner)' : '';
  return row.passed
    ? el('span', { class: 'agree verdict-pass', text: `pass${note}` })
    : el('span', { class: 'differ verdict-fail', text: `fail: ${row.detail}${note}` });
}

/** Run `graph` natively and render the comparison into `container`. */
export async function showComparison(container, graph, browserResult) {
  container.hidden = false;
  container.replaceChildren(el('p', { class: 'summary', text: 'Running the same graph natively…' }));
  let native;
  const t0 = performance.now();
  try {
    native = await runNative(graph);
  } catch (err) {
    container.replaceChildren(el('div', { class: 'error', role: 'alert' }, [
      el('p', { class: 'error-title', text: `Native run failed: ${err.code ?? 'Error'}: ${err.message}` }),
    ]));
    return;
  }
  const ms = performance.now() - t0;
  const rows = compareResults(browserResult, native, graph).map((r) => ({ ...r, graph }));
  const nativeText = describeNative(native);
  const failed = rows.filter((r) => r.passed !== true).length;
  const overall = failed
    ? `${failed} of ${rows.length} output${rows.length === 1 ? '' : 's'} outside the protocol tolerance`
    : `all ${rows.length} output${rows.length === 1 ? '' : 's'} within the protocol tolerance (judged as the conformance runner does, native as the reference)`;
  const table = el('table', { class: 'ulps', 'aria-label': 'Max difference per output' }, [
    el('thead', {}, [el('tr', {}, ['output', 'shape', 'values', 'max difference', 'max |Δ|', 'protocol tolerance', 'verdict']
      .map((h) => el('th', { text: h, scope: 'col' })))]),
    el('tbody', {}, rows.map((r) => el('tr', {}, [
      el('td', { text: r.name }),
      el('td', { text: r.shapeBrowser ? `[${r.shapeBrowser.join(', ')}]` : '' }),
      el('td', { class: 'num', text: String(r.count ?? '') }),
      el('td', {}, [verdict(r)]),
      el('td', { class: 'num', text: r.maxAbs === undefined ? '' : formatFloat32(r.maxAbs) }),
      el('td', { text: toleranceNote(r) }),
      el('td', {}, [judgement(r)]),
    ]))),
  ]);
  const side = (title, result) => el('div', { class: 'side' }, [
    el('h4', { text: title }),
    ...Object.entries(result.outputs ?? {}).map(([name, o]) => tensorTable({
      name, shape: o.shape, dtype: o.dtype, data: Array.from(o.data, toNumber),
    })),
  ]);
  container.replaceChildren(
    el('h3', { text: 'Browser vs native' }),
    el('p', { class: 'summary', text: `browser: ${describeBrowser(browserResult)} · native: ${nativeText.text} (${Math.round(ms)} ms round trip)`, title: nativeText.detail }),
    el('p', { class: `summary verdict ${failed ? 'differ' : 'agree'}`, role: 'status', text: overall }),
    table,
    el('div', { class: 'sides' }, [side(`browser — ${browserResult.backend}`, browserResult), side(`native — ${native.backend}`, native)]),
  );
}
