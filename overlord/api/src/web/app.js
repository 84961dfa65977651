// Func's web UI: a small single-page app over func-api (no framework, no
// build step). Every text that comes from a minion or a job is put in the
// page as text (textContent / text nodes), never as markup.
'use strict';

const main = () => document.getElementById('main');

// el('tag.class', {attr}, children...): children that are not nodes become text.
function el(spec, attrs, ...children) {
  const [tag, ...classes] = spec.split('.');
  const e = document.createElement(tag);
  if (classes.length) e.className = classes.join(' ');
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'value') e.value = v;
    else if (k === 'checked') e.checked = !!v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function show(...nodes) {
  const m = main();
  m.replaceChildren(...nodes);
}

function message(text, kind) {
  return el('div.msg.' + (kind || 'error'), {}, text);
}

class Unauthorized extends Error {}

// A call to func-api. State changes carry X-Func-CSRF: a header no other
// site can make a browser send (with the SameSite=Strict cookie).
async function api(method, path, body) {
  const opts = { method, credentials: 'same-origin', headers: { 'X-Func-CSRF': '1' } };
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const r = await fetch(path, opts);
  let doc = null;
  try { doc = await r.json(); } catch (e) { doc = null; }
  if (r.status === 401) throw new Unauthorized((doc && doc.error) || 'log in');
  if (!r.ok) throw new Error((doc && doc.error) || ('HTTP ' + r.status));
  return { status: r.status, doc };
}

function link(href, ...text) {
  return el('a', { href, 'data-link': true }, ...text);
}

function go(path) {
  history.pushState(null, '', path);
  route();
}

document.addEventListener('click', (ev) => {
  const a = ev.target.closest && ev.target.closest('a[data-link]');
  if (a && !ev.ctrlKey && !ev.metaKey && ev.button === 0) {
    ev.preventDefault();
    go(a.getAttribute('href'));
  }
});
window.addEventListener('popstate', () => route());

// ---- results: how a value looks, whether it failed ----------------------

function isRemoteError(v) {
  return Array.isArray(v) && v.length >= 3 && v[0] === 'REMOTE_ERROR';
}

// 'ok' | 'failed' | 'unreachable' | 'abandoned' for a finished host's result
// (abandoned: a batch stopped or halted before it was sent; not a failure).
function verdict(v, okHint) {
  if (isRemoteError(v)) {
    const kind = String(v[1] || '');
    if (kind === 'func.overlord.BatchAbandoned') return 'abandoned';
    return /^(socket\.|ssl\.)/.test(kind) || ['func.overlord.CallError', 'func.overlord.BatchUnreachable', 'func.overlord.BatchTimeout', 'func.overlord.WorkerDied'].includes(kind) ? 'unreachable' : 'failed';
  }
  if (okHint === false) return 'failed';
  return 'ok';
}

function copyButton(text) {
  return el('button.plain.copy', { type: 'button', title: 'copy to the clipboard', onclick: () => navigator.clipboard && navigator.clipboard.writeText(text) }, 'copy');
}

// command.run's [rc, stdout, stderr]: the exit status, then the output as text.
function commandNode(v) {
  const [rc, out, err] = v;
  const parts = [el('div', {}, el('span.badge.' + (rc === 0 ? 'ok' : 'failed'), {}, 'exit ' + rc))];
  if (out) parts.push(textBlock(String(out)));
  if (err) parts.push(el('div.error-text', {}, textBlock(String(err))));
  return el('div', {}, parts);
}

function textBlock(text) {
  const pre = el('pre', {}, text);
  const long = text.length > 300 || text.split('\n').length > 6;
  if (!long) return el('div.row', {}, pre, text.length > 20 ? copyButton(text) : null);
  const first = text.split('\n')[0].slice(0, 120);
  return el('details', {}, el('summary', {}, first + ' … (' + text.length + ' characters)', copyButton(text)), pre);
}

function resultNode(v, truncated, fn) {
  if (truncated) return el('span.muted', {}, 'result too large for the event stream: reload the page to see it');
  if (isRemoteError(v)) {
    const text = String(v[1]) + ': ' + String(v[2]) + (v[3] ? '\n' + String(v[3]) : '');
    return el('pre.error-text', {}, text);
  }
  if (fn === 'command.run' && Array.isArray(v) && v.length === 3 && typeof v[0] === 'number') return commandNode(v);
  const text = typeof v === 'string' ? v : JSON.stringify(v, null, 2);
  const pre = el('pre', {}, text);
  const copy = text.length > 20 ? copyButton(text) : null;
  if (text.length > 300 || text.split('\n').length > 6) {
    const first = text.split('\n')[0].slice(0, 120);
    return el('details', {}, el('summary', {}, first + ' … (' + text.length + ' characters)', copy), pre);
  }
  return el('div.row', {}, pre, copy);
}

// Rows appended a slice per animation frame: a job of 1,000 hosts never
// freezes the page.
function renderer(tbody) {
  const queue = [];
  let scheduled = false;
  function flush() {
    scheduled = false;
    const slice = queue.splice(0, 150);
    for (const [key, row] of slice) {
      const old = tbody.querySelector('tr[data-host="' + CSS.escape(key) + '"]');
      if (row.classList.contains('failed') || row.classList.contains('unreachable')) {
        // A failure moves up among the failures, where it is seen.
        if (old) old.remove();
        const firstFine = [...tbody.children].find((r) => !r.classList.contains('failed') && !r.classList.contains('unreachable'));
        tbody.insertBefore(row, firstFine || null);
      } else if (old) old.replaceWith(row); else tbody.append(row);
    }
    if (queue.length) { scheduled = true; requestAnimationFrame(flush); }
  }
  return (key, row) => {
    queue.push([key, row]);
    if (!scheduled) { scheduled = true; requestAnimationFrame(flush); }
  };
}

// ---- the event stream (fetch + a small SSE parser; each event's data is {tag, data}) ----

function follow(onEvent, onOpen) {
  const ctrl = new AbortController();
  let last = null;
  let stopped = false;
  (async function run() {
    while (!stopped) {
      try {
        const headers = last ? { 'Last-Event-ID': last } : {};
        const r = await fetch('/api/v1/events', { credentials: 'same-origin', headers, signal: ctrl.signal });
        if (r.status === 401) { route(); return; }
        if (!r.ok || !r.body) throw new Error('HTTP ' + r.status);
        if (onOpen) { const f = onOpen; onOpen = null; await f(); }
        const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            const ev = { id: null, data: '' };
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) continue;
              const j = line.indexOf(':');
              const k = j < 0 ? line : line.slice(0, j);
              let v = j < 0 ? '' : line.slice(j + 1);
              if (v.startsWith(' ')) v = v.slice(1);
              if (k === 'id') ev.id = v; else if (k === 'data') ev.data += v;
            }
            if (ev.id) last = ev.id;
            // Salt's shape: data is {"tag", "data"}.
            let msg = null;
            try { msg = JSON.parse(ev.data); } catch (e) { msg = null; }
            if (!msg || typeof msg.tag !== 'string') continue;
            if (msg.tag === 'auth/expired') { stopped = true; route(); return; }
            onEvent(msg.tag, msg.data);
          }
        }
      } catch (e) {
        if (stopped) return;
      }
      if (!stopped) await new Promise((res) => setTimeout(res, 1000));
    }
  })();
  return () => { stopped = true; ctrl.abort(); };
}

let leave = null; // what the current page stops when another is shown

// ---- pages ---------------------------------------------------------------

function nav(who) {
  const n = document.getElementById('nav');
  if (!who) { n.replaceChildren(); return; }
  n.replaceChildren(
    link('/', 'Minions'), link('/run', 'Run'), link('/jobs', 'Jobs'),
    link('/schedules', 'Schedules'), link('/keys', 'Keys'), link('/audit', 'Audit'), link('/notifications', 'Notifications'),
    el('a.right', { href: '#', onclick: async (ev) => { ev.preventDefault(); await api('POST', '/api/v1/logout'); go('/'); } }, 'Log out'));
}

function loginPage(why) {
  nav(null);
  const input = el('input', { type: 'password', name: 'token', id: 'token', autocomplete: 'off', placeholder: 'fapi_…', required: true });
  const status = el('div');
  const form = el('form.card.login', {
    onsubmit: async (ev) => {
      ev.preventDefault();
      status.replaceChildren();
      try {
        await api('POST', '/api/v1/login', { token: input.value.trim() });
        route();
      } catch (e) {
        status.replaceChildren(message(e.message));
      }
    },
  },
  el('h1', {}, 'Log in to Func'),
  el('p.muted', {}, 'With a token from func-api token create NAME --admin (or --allow SPEC=METHODS).'),
  el('label.field', {}, el('span', {}, 'Token'), input), ' ',
  el('button', { type: 'submit', id: 'login' }, 'Log in'),
  status);
  show(form);
  if (why) status.append(message(why, 'info'));
  input.focus();
  // Single sign-on, when func-api has an OpenID provider ([oidc]).
  api('GET', '/api/v1/login/options').then(({ doc }) => {
    if (doc && doc.oidc) {
      form.insertBefore(el('p', {}, el('a.button', { href: '/api/v1/login/oidc', id: 'sso' }, 'Sign in with single sign-on'), ' or with a token:'), form.children[2]);
    }
  }).catch(() => {});
}

function ago(t) {
  if (!t) return 'not seen since func-api started';
  const s = Math.max(0, Date.now() / 1000 - t);
  if (s < 60) return 'seen ' + Math.round(s) + ' s ago';
  if (s < 3600) return 'seen ' + Math.round(s / 60) + ' min ago';
  return 'seen ' + new Date(t * 1000).toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
}

function globToRegex(text) {
  const esc = text.replace(/[.+^${}()|\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(text.includes('*') || text.includes('?') ? '^' + esc + '$' : esc, 'i');
}

async function minionsPage() {
  const { doc } = await api('GET', '/api/v1/minions');
  const filter = el('input', { type: 'text', id: 'filter', placeholder: 'filter: web* or part of a name' });
  const tbody = el('tbody');
  const count = el('span.muted');
  const state = new Map();
  function draw() {
    let re;
    try { re = globToRegex(filter.value.trim()); } catch (e) { re = /.*/; }
    const shown = doc.minions.filter((m) => re.test(m.name));
    count.textContent = shown.length + ' of ' + doc.minions.length + ' minions';
    tbody.replaceChildren(...shown.map((m) => {
      const st = state.get(m.name);
      return el('tr', { 'data-host': m.name },
        el('td', {}, link('/minions/' + encodeURIComponent(m.name), m.name)),
        el('td.muted', {}, m.address),
        el('td', {}, st ? el('span.badge.' + st, {}, st) : '', ' ', el('span.muted', {}, ago(m.last_seen))));
    }));
  }
  filter.addEventListener('input', draw);
  // Targeting by facts: the minions judge the filter (DESIGN §16).
  const byFacts = el('input', { type: 'text', id: 'fact-filter', placeholder: 'facts: os=Debian,num_cpus>=2 (Enter)' });
  const factNote = el('span.muted', { id: 'fact-note' });
  // Only the last filter asked is shown: an earlier one answering later
  // (its minions slower to judge) must not draw over it.
  let asked = 0;
  byFacts.addEventListener('keydown', async (ev) => {
    if (ev.key !== 'Enter') return;
    const mine = ++asked;
    const terms = byFacts.value.trim();
    factNote.textContent = '';
    try {
      const { doc: chosen } = await api('GET', '/api/v1/minions' + (terms ? '?filter=' + encodeURIComponent(terms) : ''));
      if (mine !== asked) return;
      doc.minions = chosen.minions;
      const left = Object.keys(chosen.not_judged || {});
      if (left.length) factNote.textContent = 'could not judge: ' + left.join(' ');
    } catch (e) {
      if (e instanceof Unauthorized) throw e;
      if (mine !== asked) return;
      doc.minions = [];
      factNote.textContent = e.message;
    }
    draw();
  });
  const ping = el('button.plain', {
    type: 'button', id: 'ping', onclick: async () => {
      ping.disabled = true;
      try {
        // Every minion; a limited token may ping only those it sees.
        let r;
        try {
          r = await api('POST', '/api/v1/calls', { spec: '*', module: 'test', method: 'ping' });
        } catch (e) {
          const mine = doc.minions.map((m) => m.name).join(';');
          if (e instanceof Unauthorized || !mine || mine.length > 4096) throw e;
          r = await api('POST', '/api/v1/calls', { spec: mine, module: 'test', method: 'ping' });
        }
        for (const [h, v] of Object.entries(r.doc)) state.set(h, verdict(v));
        const fresh = await api('GET', '/api/v1/minions');
        doc.minions = fresh.doc.minions;
      } catch (e) {
        main().prepend(message(e.message));
      }
      ping.disabled = false;
      draw();
    },
  }, 'Ping all');
  show(el('h1', {}, 'Minions'), el('div.row', {}, filter, byFacts, ping, count), factNote,
    el('table', { id: 'minions' }, el('thead', {}, el('tr', {}, el('th', {}, 'name'), el('th', {}, 'address'), el('th', {}, 'state'))), tbody));
  draw();
  filter.focus();
}

// A call form: SPEC, options, the method's arguments; the hosts are shown
// before anything is sent.
function callForm(spec, module, method, args, fixedArgs) {
  const specIn = el('input', { type: 'text', name: 'spec', value: spec, required: true });
  const asyncIn = el('input', { type: 'checkbox', name: 'async' });
  const batchIn = el('input', { type: 'text', name: 'batch', placeholder: 'e.g. 10 or 25%', size: 8 });
  const failIn = el('input', { type: 'checkbox', name: 'failhard' });
  const inputs = [];
  const fields = [];
  const ordered = Object.entries(args || {}).sort((a, b) => (a[1].order || 0) - (b[1].order || 0));
  for (const [name, meta] of ordered) {
    const type = String(meta.type || 'string');
    let input;
    if (type === 'bool' || type === 'boolean') input = el('input', { type: 'checkbox', name });
    else if (type === 'int' || type === 'integer' || type === 'float' || type === 'double') input = el('input', { type: 'number', step: 'any', name });
    else if (type === 'list' || type === 'hash' || type === 'array' || type === 'struct') input = el('textarea', { name, placeholder: type === 'list' || type === 'array' ? '["a", "b"] (JSON)' : '{"k": "v"} (JSON)' });
    else input = el('input', { type: 'text', name });
    inputs.push([name, type, meta, input]);
    fields.push(el('label.field', { title: meta.description || '' },
      el('span', {}, name + (meta.optional ? ' (optional)' : '')), input, ' ', el('span.muted', {}, type + (meta.description ? ' — ' + meta.description : ''))));
  }
  const out = el('div');
  function values() {
    if (fixedArgs) return fixedArgs;
    const list = [];
    for (const [name, type, meta, input] of inputs) {
      let v;
      if (input.type === 'checkbox') v = input.checked;
      else if (input.value === '' && meta.optional) break; // the rest are left out
      else if (input.type === 'number') v = Number(input.value);
      else if (input.tagName === 'TEXTAREA') {
        try { v = JSON.parse(input.value || (type === 'hash' || type === 'struct' ? '{}' : '[]')); } catch (e) { throw new Error(name + ': not JSON'); }
      } else v = input.value;
      list.push(v);
    }
    return list;
  }
  const form = el('form.card', {
    onsubmit: async (ev) => {
      ev.preventDefault();
      out.replaceChildren();
      let req;
      try {
        req = { spec: specIn.value.trim(), module, method, args: values(), async: asyncIn.checked, failhard: failIn.checked || undefined };
        if (batchIn.value.trim()) req.batch = batchIn.value.trim();
        if (!req.batch) delete req.failhard;
      } catch (e) { out.replaceChildren(message(e.message)); return; }
      let hosts;
      try { hosts = (await api('GET', '/api/v1/minions?spec=' + encodeURIComponent(req.spec))).doc.minions.map((m) => m.name); } catch (e) { out.replaceChildren(message(e.message)); return; }
      if (!hosts.length) { out.replaceChildren(message('No minion matches ' + req.spec)); return; }
      const confirm = el('button', {
        type: 'button', class: 'confirm', onclick: async () => {
          confirm.disabled = true;
          try {
            const r = await api('POST', '/api/v1/calls', req);
            if (r.status === 202) { go((req.batch ? '/batches/' : '/jobs/') + encodeURIComponent(r.doc.job_id)); return; }
            out.replaceChildren(resultsTable(module + '.' + method, r.doc));
          } catch (e) { out.replaceChildren(message(e.message)); }
        },
      }, 'Run ' + module + '.' + method + ' on ' + hosts.length + (hosts.length === 1 ? ' host' : ' hosts'));
      out.replaceChildren(el('div.card', {},
        el('div', {}, 'Will run on ' + hosts.length + (hosts.length === 1 ? ' host:' : ' hosts:')),
        el('div.hosts', { id: 'resolved' }, hosts.join(' ')), confirm));
    },
  },
  el('h2', {}, module + '.' + method),
  el('label.field', {}, el('span', {}, 'SPEC'), specIn),
  ...fields,
  el('div.row', {}, el('label', {}, asyncIn, ' async'), el('label', {}, 'batch ', batchIn), el('label', {}, failIn, ' failhard (batch)')),
  el('button', { type: 'submit' }, 'Show hosts'), out);
  return form;
}

function resultsTable(fn, results) {
  const hosts = Object.keys(results);
  const counts = { ok: 0, failed: 0, unreachable: 0 };
  const tbody = el('tbody');
  const add = renderer(tbody);
  const rows = hosts.map((h) => [h, verdict(results[h], commandFailed(fn, results[h]))]).sort(byState);
  for (const [h, state] of rows) {
    counts[state]++;
    add(h, hostRow(h, state, results[h], false, fn));
  }
  return el('div', {},
    el('div.counts', {}, el('span.badge.ok', {}, counts.ok + ' ok'), el('span.badge.failed', {}, counts.failed + ' failed'), el('span.badge.unreachable', {}, counts.unreachable + ' unreachable')),
    el('table.results', {}, el('thead', {}, el('tr', {}, el('th', {}, 'host'), el('th', {}, 'state'), el('th', {}, 'result'))), tbody));
}

function hostRow(host, state, value, truncated, fn) {
  return el('tr.' + state, { 'data-host': host },
    el('td', {}, host), el('td', {}, el('span.badge.' + state, {}, state)),
    el('td', {}, state === 'waiting' ? el('span.muted', {}, String(value || '')) : resultNode(value, truncated, fn)));
}

const RANK = { failed: 0, unreachable: 1, waiting: 2, abandoned: 3, ok: 4 };
// Problems first, then hosts still running, then the rest; natural order (web2 before web10).
function byState(a, b) {
  return (RANK[a[1]] - RANK[b[1]]) || a[0].localeCompare(b[0], undefined, { numeric: true });
}

function commandFailed(fn, v) {
  return fn === 'command.run' && Array.isArray(v) && typeof v[0] === 'number' && v[0] !== 0 ? false : undefined;
}

async function minionPage(name) {
  const { doc } = await api('GET', '/api/v1/minions/' + encodeURIComponent(name) + '/methods');
  const modules = Object.keys(doc.modules).sort();
  const list = el('div');
  for (const m of modules) {
    const methods = Object.keys(doc.modules[m]).sort();
    const box = el('details.card', { 'data-module': m }, el('summary', {}, m + ' (' + methods.length + ' methods)'));
    for (const meth of methods) {
      const info = doc.modules[m][meth] || {};
      const d = el('details', { 'data-method': m + '.' + meth }, el('summary', {}, meth, ' ', el('span.muted', {}, info.description || '')));
      d.addEventListener('toggle', () => {
        if (d.open && d.children.length === 1) d.append(callForm(name, m, meth, info.args));
      }, { once: false });
      box.append(d);
    }
    list.append(box);
  }
  const facts = el('dl.facts', { id: 'facts' });
  const factsNote = el('p.muted', { id: 'facts-note' });
  show(el('h1', {}, 'Minion ', name), facts, factsNote, el('p.muted', {}, 'Modules and methods (get_method_args); open a method for its form.'), list);
  // Its facts (fact.items), read now or the last kept; text only.
  try {
    const { doc: r } = await api('GET', '/api/v1/minions/' + encodeURIComponent(name) + '/facts');
    const shown = (v) => (Array.isArray(v) ? v.join(', ') : (v !== null && typeof v === 'object' ? JSON.stringify(v) : String(v)));
    const keys = Object.keys(r.facts).filter((k) => k !== '__errors__').sort();
    facts.replaceChildren(...keys.flatMap((k) => [el('dt', {}, k), el('dd', { 'data-fact': k }, shown(r.facts[k]))]));
    factsNote.textContent = (r.live ? 'Facts read now' : 'Facts kept from ' + new Date(r.seen * 1000).toISOString() + ' (' + (r.error || '') + ')')
      + (r.facts.__errors__ ? '; local facts not read: ' + Object.keys(r.facts.__errors__).join(' ') : '');
  } catch (e) { if (e instanceof Unauthorized) throw e; /* not within this caller's rights: no facts shown */ }
}

function runPage() {
  const module = el('input', { type: 'text', name: 'module', placeholder: 'test' });
  const method = el('input', { type: 'text', name: 'method', placeholder: 'ping' });
  const argsIn = el('textarea', { name: 'args', placeholder: '[] — the arguments, as a JSON list' });
  const slot = el('div');
  const form = el('form.card', {
    onsubmit: (ev) => {
      ev.preventDefault();
      let args;
      try { args = JSON.parse(argsIn.value || '[]'); } catch (e) { slot.replaceChildren(message('arguments: not JSON')); return; }
      if (!Array.isArray(args)) { slot.replaceChildren(message('arguments: a JSON list')); return; }
      if (!module.value.trim() || !method.value.trim()) { slot.replaceChildren(message('module and method, please')); return; }
      const f = callForm('*', module.value.trim(), method.value.trim(), {}, args);
      f.querySelector('h2').after(el('p.muted', {}, 'arguments: ' + JSON.stringify(args)));
      slot.replaceChildren(f);
    },
  }, el('label.field', {}, el('span', {}, 'module'), module), el('label.field', {}, el('span', {}, 'method'), method),
  el('label.field', {}, el('span', {}, 'arguments'), argsIn), el('button', { type: 'submit' }, 'Next'));
  show(el('h1', {}, 'Run a method'), form, slot);
}

// A job's outcome: failed (red) when any host failed or was unreachable.
function outcomeBadge(j) {
  const o = j.outcome || (j.finished ? 'ok' : 'running');
  const cls = { ok: 'ok', failed: 'failed', running: 'waiting', interrupted: 'unreachable', stopped: 'unreachable' }[o] || 'waiting';
  return el('span.badge.' + cls + '.outcome', {}, o);
}

// "3 ok, 1 failed, 2 abandoned" (the non-zero counts), or the host count.
function hostCounts(j) {
  const c = j.counts;
  if (!c) return String(j.hosts);
  const parts = ['ok', 'failed', 'unreachable', 'abandoned', 'pending'].filter((k) => c[k] > 0).map((k) => c[k] + ' ' + k);
  return parts.join(', ') || String(j.hosts);
}

async function jobsPage() {
  const params = new URLSearchParams(location.search);
  const fn = el('input', { type: 'text', name: 'function', placeholder: 'test.*', value: params.get('function') || '' });
  const tgt = el('input', { type: 'text', name: 'target', placeholder: 'web*', value: params.get('target') || '' });
  const sched = el('input', { type: 'text', name: 'schedule', placeholder: 'nightly-*', value: params.get('schedule') || '' });
  const q = new URLSearchParams({ limit: '50' });
  if (fn.value) q.set('function', fn.value);
  if (tgt.value) q.set('target', tgt.value);
  if (sched.value) q.set('schedule', sched.value);
  if (params.get('before')) q.set('before', params.get('before'));
  const { doc } = await api('GET', '/api/v1/jobs?' + q);
  const rows = doc.jobs.map((j) => el('tr', {},
    el('td', {}, link((j.batch ? '/batches/' : '/jobs/') + encodeURIComponent(j.id), j.id)),
    el('td', {}, j.function), el('td', {}, j.target), el('td.muted', {}, j.user),
    el('td', { 'data-schedule': j.schedule || '' }, j.schedule ? link('/jobs?schedule=' + encodeURIComponent(j.schedule), j.schedule) : ''),
    el('td.muted', {}, new Date(j.started * 1000).toISOString().replace('T', ' ').slice(0, 19)),
    el('td', {}, outcomeBadge(j)),
    el('td.muted', {}, hostCounts(j))));
  const apply = el('form.row', {
    onsubmit: (ev) => {
      ev.preventDefault();
      const p = new URLSearchParams();
      if (fn.value.trim()) p.set('function', fn.value.trim());
      if (tgt.value.trim()) p.set('target', tgt.value.trim());
      if (sched.value.trim()) p.set('schedule', sched.value.trim());
      go('/jobs' + (p.toString() ? '?' + p : ''));
    },
  }, el('label', {}, 'function ', fn), el('label', {}, 'target ', tgt), el('label', {}, 'schedule ', sched),
  el('button', { type: 'submit' }, 'Filter'));
  const pager = el('div.row');
  if (params.get('before')) pager.append(el('button.plain', { type: 'button', onclick: () => history.back() }, '← newer'));
  if (doc.next) {
    const p = new URLSearchParams(params);
    p.set('before', doc.next);
    pager.append(link('/jobs?' + p, 'older →'));
  }
  show(el('h1', {}, 'Jobs'), apply,
    el('table', { id: 'jobs' }, el('thead', {}, el('tr', {}, ...['job', 'function', 'target', 'user', 'schedule', 'started (UTC)', 'state', 'hosts'].map((h) => el('th', {}, h)))), el('tbody', {}, rows)),
    doc.jobs.length ? '' : el('p.muted', {}, 'No jobs.'), pager);
}

async function jobPage(id) {
  const state = new Map(); // host → 'ok' | 'failed' | 'unreachable' | 'waiting'
  const counts = el('div.counts');
  const title = el('div.muted');
  const tbody = el('tbody');
  const add = renderer(tbody);
  const info = el('div');
  let fn = '';
  function recount() {
    const c = { ok: 0, failed: 0, unreachable: 0, abandoned: 0, waiting: 0 };
    for (const s of state.values()) c[s]++;
    counts.replaceChildren(
      el('span.badge.ok', { id: 'count-ok' }, c.ok + ' ok'), el('span.badge.failed', { id: 'count-failed' }, c.failed + ' failed'),
      el('span.badge.unreachable', { id: 'count-unreachable' }, c.unreachable + ' unreachable'),
      el('span.badge', { id: 'count-abandoned' }, c.abandoned + ' abandoned'), el('span.badge.waiting', { id: 'count-waiting' }, c.waiting + ' waiting'));
    kill.disabled = c.waiting === 0;
    rerunFailed.disabled = c.failed + c.unreachable === 0;
  }
  function setHost(host, s, value, truncated) {
    if (state.get(host) && state.get(host) !== 'waiting' && s === 'waiting') return;
    state.set(host, s);
    add(host, hostRow(host, s, value, truncated, fn));
  }
  const kill = el('button.danger', {
    type: 'button', id: 'kill', onclick: async () => {
      kill.disabled = true;
      try { await api('POST', '/api/v1/jobs/' + encodeURIComponent(id) + '/kill', {}); info.replaceChildren(message('Kill sent to the hosts still running it.', 'info')); } catch (e) { info.replaceChildren(message(e.message)); }
    },
  }, 'Kill');
  // Re-run: a new job from the same signed request (all hosts, or those
  // that failed or were unreachable); its page follows.
  const rerunner = (failedOnly) => async () => {
    rerun.disabled = rerunFailed.disabled = true;
    try {
      const { doc } = await api('POST', '/api/v1/jobs/' + encodeURIComponent(id) + '/rerun' + (failedOnly ? '?failed_only=true' : ''));
      go('/jobs/' + encodeURIComponent(doc.job_id));
    } catch (e) {
      if (e instanceof Unauthorized) throw e;
      info.replaceChildren(message(e.message));
      rerun.disabled = false;
      recount();
    }
  };
  const rerun = el('button.plain', { type: 'button', id: 'rerun', onclick: rerunner(false) }, 'Re-run');
  const rerunFailed = el('button.plain', { type: 'button', id: 'rerun-failed', onclick: rerunner(true) }, 'Re-run failed');
  const about = el('dl.facts', { id: 'about' });
  show(el('p', {}, link('/jobs', '← Jobs')), el('h1', {}, 'Job'), el('p', {}, el('code', {}, id)), title, about,
    el('div.row', {}, counts, kill, rerun, rerunFailed), info,
    el('table.results', { id: 'results' }, el('thead', {}, el('tr', {}, el('th', {}, 'host'), el('th', {}, 'state'), el('th', {}, 'result'))), tbody));
  const prefix = 'job/' + id + '/';
  async function load() {
    try {
      const { doc } = await api('GET', '/api/v1/jobs/' + encodeURIComponent(id));
      fn = doc.function;
      title.textContent = doc.function + ' — ' + doc.state;
      const when = (t) => new Date(t * 1000).toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
      const took = doc.ended ? ((doc.ended - doc.started) < 60 ? (doc.ended - doc.started).toFixed(1) + ' s'
        : Math.round((doc.ended - doc.started) / 60) + ' min') : 'running';
      const facts = [['who', doc.user], ['target', doc.target], ['arguments', JSON.stringify(doc.args || [])],
        ['started', doc.started ? when(doc.started) : ''], ['took', took]];
      about.replaceChildren(...facts.flatMap(([k, v]) => [el('dt', {}, k), el('dd', { 'data-about': k }, String(v === undefined ? '' : v))]));
      if (doc.schedule) about.append(el('dt', {}, 'schedule'), el('dd', { 'data-about': 'schedule' }, link('/schedules', doc.schedule)));
      if (doc.rerun_of) about.append(el('dt', {}, 're-run of'), el('dd', { 'data-about': 'rerun_of' }, link('/jobs/' + encodeURIComponent(doc.rerun_of), doc.rerun_of)));
      const rows = Object.entries(doc.waiting || {}).map(([h, why]) => [h, 'waiting', why])
        .concat(Object.entries(doc.results || {}).map(([h, v]) => [h, verdict(v, commandFailed(fn, v)), v]))
        .sort(byState);
      for (const [h, s, v] of rows) setHost(h, s, v);
      recount();
    } catch (e) {
      if (e instanceof Unauthorized) throw e;
      info.replaceChildren(message(e.message));
    }
  }
  // The stream first, then the status: nothing falls between the two.
  leave = follow((tag, data) => {
    if (!tag.startsWith(prefix) || !data) return;
    const rest = tag.slice(prefix.length);
    if (rest.startsWith('ret/')) {
      const host = rest.slice(4);
      setHost(host, verdict(data.result, data.ok), data.result, data.truncated);
      recount();
    } else if (rest === 'complete') {
      title.textContent = (fn || title.textContent.split(' — ')[0]) + ' — finished';
      load().catch(() => {}); // when it ended, how long it took
    }
  }, load);
}

async function batchPage(id) {
  const counts = el('div.counts');
  const head = el('div.muted');
  const tbody = el('tbody');
  const info = el('div');
  async function load() {
    const { doc } = await api('GET', '/api/v1/batches/' + encodeURIComponent(id));
    const c = doc.counts || {};
    const failed = ['failed', 'timeout', 'unreachable', 'refused'].reduce((n, k) => n + (c[k] || 0), 0);
    const abandoned = (c.killed || 0) + (c.abandoned || 0);
    head.textContent = doc.function + ' — batch of ' + doc.size + ' (' + doc.mode + ') — ' + doc.state;
    counts.replaceChildren(el('span.badge.ok', { id: 'b-done' }, (c.done || 0) + ' done'), el('span.badge.waiting', { id: 'b-active' }, (c.active || 0) + ' active'),
      el('span.badge', { id: 'b-pending' }, (c.pending || 0) + ' pending'), el('span.badge.failed', { id: 'b-failed' }, failed + ' failed'),
      el('span.badge', { id: 'b-abandoned' }, abandoned + ' abandoned'));
    tbody.replaceChildren(...Object.entries(doc.hosts || {}).map(([h, s]) => el('tr', { 'data-host': h }, el('td', {}, h),
      el('td', {}, el('span.badge.' + ({ done: 'ok', active: 'waiting', pending: 'x', abandoned: 'x', killed: 'x' }[s.state] || 'failed'), {}, s.state)),
      el('td.muted', {}, s.reason || ''))));
    stop.disabled = kill.disabled = !!doc.complete;
    // Recover: only a batch nobody drives (interrupted, or its driver died).
    recover.hidden = doc.complete || doc.driver_alive;
    head.dataset.state = doc.state;
  }
  const control = (killToo) => async () => {
    stop.disabled = kill.disabled = true;
    try {
      await api('POST', '/api/v1/batches/' + encodeURIComponent(id) + '/stop', { kill: killToo });
      info.replaceChildren(message(killToo ? 'Stop and kill requested.' : 'Stop requested: no new hosts; running ones finish.', 'info'));
      await load();
    } catch (e) { info.replaceChildren(message(e.message)); }
  };
  const stop = el('button.plain', { type: 'button', id: 'stop', onclick: control(false) }, 'Stop');
  const kill = el('button.danger', { type: 'button', id: 'stop-kill', onclick: control(true) }, 'Stop and kill');
  const recover = el('button', {
    type: 'button', id: 'recover', hidden: true, onclick: async () => {
      recover.disabled = true;
      try {
        const { doc } = await api('POST', '/api/v1/batches/' + encodeURIComponent(id) + '/recover');
        info.replaceChildren(message('Recover: ' + (doc && (doc.outcome || doc.message || doc.state) || 'requested'), 'info'));
        await load();
      } catch (e) { info.replaceChildren(message(e.message)); }
      recover.disabled = false;
    },
  }, 'Recover');
  show(el('p', {}, link('/jobs', '← Jobs')), el('h1', {}, 'Batch'), el('p', {}, el('code', {}, id), ' ', link('/jobs/' + encodeURIComponent(id), 'results per host')), head,
    el('div.row', {}, counts, stop, kill, recover), info,
    el('table', { id: 'batch-hosts' }, el('thead', {}, el('tr', {}, el('th', {}, 'host'), el('th', {}, 'state'), el('th', {}, 'why'))), tbody));
  let pending = false;
  leave = follow((tag) => {
    if (!tag.startsWith('batch/' + id + '/') && !tag.startsWith('job/' + id + '/')) return;
    if (pending) return;
    pending = true;
    setTimeout(() => { pending = false; load().catch(() => {}); }, 100);
  }, load);
}

function when(t) {
  return t ? new Date(t * 1000).toISOString().replace('T', ' ').slice(0, 19) + ' UTC' : '—';
}

// A button that asks once more before it acts (no dialog to dismiss).
function confirmButton(label, id, act) {
  const b = el('button.danger', {
    type: 'button', id, onclick: async () => {
      if (b.dataset.armed !== '1') { b.dataset.armed = '1'; b.textContent = 'Confirm: ' + label; return; }
      b.disabled = true;
      await act();
    },
  }, label);
  return b;
}

/** A fingerprint's first and last four bytes (`AB:CD:EF:01:…:23:45:67:89`). */
function abbreviated(fp) {
  const parts = String(fp || '').split(':');
  return parts.length > 8 ? parts.slice(0, 4).join(':') + ':…:' + parts.slice(-4).join(':') : String(fp || '');
}

async function keysPage() {
  const info = el('div', { id: 'keys-info' });
  let doc;
  try {
    doc = (await api('GET', '/api/v1/keys')).doc;
  } catch (e) {
    if (e instanceof Unauthorized) throw e;
    show(el('h1', {}, 'Keys'), message(e.message));
    return;
  }
  const act = async (what, name, body) => {
    try {
      const done = (await api('POST', '/api/v1/keys/' + encodeURIComponent(name) + '/' + what, body)).doc;
      await keysPage();
      document.getElementById('keys-info').replaceChildren(message(name + ': ' + ((done && done.outcome) || what), 'info'));
    } catch (e) {
      if (e instanceof Unauthorized) throw e;
      info.replaceChildren(message(name + ': ' + e.message));
    }
  };
  const pending = doc.pending.map((k) => {
    const typed = el('input', { type: 'text', name: 'fingerprint', placeholder: 'the fingerprint the minion printed', autocomplete: 'off', 'aria-label': 'fingerprint of ' + k.name, required: true });
    const form = el('form.row', {
      onsubmit: (ev) => { ev.preventDefault(); act('sign', k.name, { fingerprint: typed.value.trim() }); },
    }, typed, el('button', { type: 'submit' }, 'Sign'));
    // Abbreviated: the fingerprint typed must be the one the minion
    // printed, compared, never one copied from this page.
    return el('tr', { 'data-key': k.name }, el('td', {}, k.name), el('td', {}, el('code.fingerprint', {}, abbreviated(k.fingerprint))),
      el('td.muted', {}, (k.address || '?') + (k.advertised ? ' (says ' + k.advertised + ')' : '')),
      el('td', {}, form, confirmButton('Reject', 'reject-' + k.name, () => act('revoke', k.name))));
  });
  const signed = doc.signed.map((k) => el('tr', { 'data-key': k.name }, el('td', {}, k.name),
    el('td', {}, el('code', {}, k.fingerprint || '')), el('td.muted', {}, k.address || ''),
    el('td', {}, confirmButton('Revoke', 'revoke-' + k.name, () => act('revoke', k.name)))));
  const revoked = doc.revoked.map((k) => el('tr', {}, el('td', {}, k.name), el('td', {}, el('code', {}, k.serial)), el('td.muted', {}, when(k.revoked))));
  const table = (id, heads, rows, none) => [el('table', { id }, el('thead', {}, el('tr', {}, ...heads.map((h) => el('th', {}, h)))), el('tbody', {}, rows)),
    rows.length ? '' : el('p.muted', {}, none)];
  show(el('h1', {}, 'Keys'), info,
    el('h2', {}, 'Pending requests'),
    el('p.muted', {}, 'Type the fingerprint the minion printed (funcd logs it) to sign: only the request with that key is signed. The page shows its beginning and end to compare, not to copy.'),
    ...table('pending', ['name', 'fingerprint', 'from', ''], pending, 'No pending requests.'),
    el('h2', {}, 'Signed'), ...table('signed', ['name', 'fingerprint', 'address', ''], signed, 'No signed minions.'),
    el('h2', {}, 'Revoked'), ...table('revoked', ['name', 'serial', 'revoked'], revoked, 'Nothing revoked.'));
}

// A form field with its label above it (a label, not only a placeholder).
function labelled(text, input) {
  return el('label.stacked', {}, el('span', {}, text), input);
}

function scheduleWhen(s) {
  return s.cron ? 'cron ' + s.cron : 'every ' + s.every + ' s';
}

async function schedulesPage() {
  const info = el('div', { id: 'schedules-info' });
  const { doc } = await api('GET', '/api/v1/schedules');
  const change = (s, body) => async () => {
    try { await api('PATCH', '/api/v1/schedules/' + encodeURIComponent(s.name), body); await schedulesPage(); } catch (e) {
      if (e instanceof Unauthorized) throw e;
      info.replaceChildren(message(e.message));
    }
  };
  const rows = doc.schedules.map((s) => {
    const r = s.request || {};
    const outcome = s.last_outcome || '';
    const cls = { ok: 'ok', failed: 'failed', running: 'waiting', skipped: 'unreachable', 'not started': 'failed' }[outcome] || '';
    return el('tr', { 'data-schedule': s.name },
      el('td', {}, s.name, ' ', link('/jobs?schedule=' + encodeURIComponent(s.name), 'runs')), el('td', {}, scheduleWhen(s)),
      el('td', {}, String(r.module) + '.' + String(r.method) + ' on ' + String(r.spec)),
      el('td', { 'data-next': '' }, s.enabled ? when(s.next_run) : 'disabled'),
      el('td', {}, when(s.last_run)),
      el('td', {}, el('span.badge.' + (cls || 'x') + '.outcome', {}, outcome),
        s.last_job ? [' ', link('/jobs/' + encodeURIComponent(s.last_job), 'job')] : '',
        s.last_error ? el('div.muted', {}, s.last_error) : '',
        s.disabled_reason && s.disabled_reason !== s.last_error ? el('div.error-text', {}, s.disabled_reason) : ''),
      el('td.muted', {}, s.owner),
      el('td', {}, el('button.plain', { type: 'button', class: 'toggle', onclick: change(s, { enabled: !s.enabled }) }, s.enabled ? 'Disable' : 'Enable'), ' ',
        confirmButton('Delete', 'delete-' + s.name, async () => {
          try { await api('DELETE', '/api/v1/schedules/' + encodeURIComponent(s.name)); await schedulesPage(); } catch (e) {
            if (e instanceof Unauthorized) throw e;
            info.replaceChildren(message(e.message));
          }
        })));
  });
  const f = {
    name: el('input', { type: 'text', name: 'name', placeholder: 'nightly-uptime', required: true, title: 'schedule name: letters, digits, - _ .' }),
    spec: el('input', { type: 'text', name: 'spec', placeholder: 'web*', required: true, title: 'target (SPEC)' }),
    module: el('input', { type: 'text', name: 'module', placeholder: 'command', required: true, title: 'module' }),
    method: el('input', { type: 'text', name: 'method', placeholder: 'run', required: true, title: 'method' }),
    args: el('input', { type: 'text', name: 'args', placeholder: '["uptime"]', title: 'arguments (a JSON list)' }),
    kind: el('select', { name: 'kind' }, el('option', { value: 'every' }, 'every (seconds)'), el('option', { value: 'cron' }, 'cron (m h dom mon dow)')),
    when: el('input', { type: 'text', name: 'when', placeholder: '300, or 0 3 * * *', required: true, title: 'seconds (at least 1), or a cron line: minute hour day-of-month month day-of-week, local time' }),
    batch: el('input', { type: 'text', name: 'batch', placeholder: '10 or 25%', title: 'batch size: N hosts or N% at a time (optional)' }),
  };
  const form = el('form.card', {
    id: 'add-schedule',
    onsubmit: async (ev) => {
      ev.preventDefault();
      const request = { spec: f.spec.value.trim(), module: f.module.value.trim(), method: f.method.value.trim() };
      try {
        if (f.args.value.trim()) request.args = JSON.parse(f.args.value);
      } catch (e) { info.replaceChildren(message('args: not a JSON list')); return; }
      if (f.batch.value.trim()) request.batch = f.batch.value.trim();
      const body = { name: f.name.value.trim(), request };
      if (f.kind.value === 'cron') body.cron = f.when.value.trim(); else body.every = Number(f.when.value.trim());
      try { await api('POST', '/api/v1/schedules', body); await schedulesPage(); } catch (e) {
        if (e instanceof Unauthorized) throw e;
        info.replaceChildren(message(e.message));
      }
    },
  }, el('h2', {}, 'Add a schedule'),
  el('div.row', {}, labelled('name', f.name), labelled('target (SPEC)', f.spec), labelled('module', f.module),
    labelled('method', f.method), labelled('arguments (JSON list)', f.args)),
  el('div.row', {}, labelled('runs', f.kind), labelled('every (seconds) or cron line', f.when), labelled('batch (optional)', f.batch),
    el('button', { type: 'submit', id: 'add' }, 'Add')),
  el('p.muted', {}, 'Each run is a job of yours (with your rights at the time it runs); cron lines are in the server\'s local time.'));
  show(el('h1', {}, 'Schedules'), info,
    el('table', { id: 'schedules' }, el('thead', {}, el('tr', {}, ...['name', 'when', 'call', 'next run', 'last run', 'last outcome', 'owner', ''].map((h) => el('th', {}, h)))), el('tbody', {}, rows)),
    rows.length ? '' : el('p.muted', {}, 'No schedules.'), form);
}

// An audit line's status: the command line's exit status ("exit 0") or
// func-api's HTTP status ("HTTP 403"), each judged by its own rule.
function auditStatus(l) {
  const exit = l.status_kind === 'exit';
  const ok = exit ? l.status === 0 : l.status >= 200 && l.status < 300;
  return el('span.badge.' + (ok ? 'ok' : 'failed'), { 'data-kind': exit ? 'exit' : 'http', title: exit ? 'exit status of func' : 'HTTP status of func-api' },
    (exit ? 'exit ' : 'HTTP ') + String(l.status));
}

// The notification targets ([notify.NAME]) and each one's last delivery.
async function notificationsPage() {
  const { doc } = await api('GET', '/api/v1/notifications');
  const rows = doc.targets.map((t) => {
    const last = t.last;
    const lastCell = !last ? el('td.muted', {}, 'nothing delivered yet')
      : el('td', {}, el('span.badge.' + (last.ok ? 'ok' : 'failed') + '.outcome', {}, last.ok ? 'delivered' : 'failed'), ' ',
        link('/jobs/' + encodeURIComponent(last.job_id), String(last.job_id)), el('span.muted', {}, ' ' + when(last.at) + ', ' + last.tries + ' tr' + (last.tries === 1 ? 'y' : 'ies')),
        last.error ? el('div.muted', {}, String(last.error)) : '');
    return el('tr', {}, el('td', {}, String(t.name)), el('td', {}, String(t.kind)), el('td', {}, String(t.on)),
      el('td', {}, String(t.for)), el('td', {}, String(t.destination)), lastCell);
  });
  show(el('h1', {}, 'Notifications'),
    el('p.muted', {}, 'Targets are [notify.NAME] sections of overlord.conf; a schedule may name them. Each job is told to each target once.'),
    rows.length ? el('table', { id: 'notifications' }, el('thead', {}, el('tr', {}, ...['name', 'kind', 'on', 'for', 'to', 'last delivery'].map((h) => el('th', {}, h)))), el('tbody', {}, rows))
      : el('p', {}, 'No notification targets are set up.'));
}

async function auditPage() {
  const params = new URLSearchParams(location.search);
  const user = el('input', { type: 'text', name: 'user', placeholder: 'cli:*, api:*', value: params.get('user') || '' });
  const action = el('input', { type: 'text', name: 'action', placeholder: 'keys *', value: params.get('action') || '' });
  const q = new URLSearchParams({ limit: '100' });
  for (const k of ['user', 'action', 'before']) if (params.get(k)) q.set(k, params.get(k));
  const { doc } = await api('GET', '/api/v1/audit?' + q);
  const rows = doc.lines.map((l) => el('tr', {},
    el('td.muted', {}, when(l.time)), el('td', {}, String(l.who)), el('td.muted', {}, l.from ? String(l.from) : ''),
    el('td', {}, String(l.action), l.spec ? el('span.muted', {}, ' on ' + String(l.spec)) : ''),
    el('td', {}, (l.hosts || []).map(String).join(', ') + ((l.host_count || 0) > (l.hosts || []).length ? ' … (' + l.host_count + ')' : '')),
    el('td', {}, auditStatus(l))));
  const apply = el('form.row', {
    onsubmit: (ev) => {
      ev.preventDefault();
      const p = new URLSearchParams();
      if (user.value.trim()) p.set('user', user.value.trim());
      if (action.value.trim()) p.set('action', action.value.trim());
      go('/audit' + (p.toString() ? '?' + p : ''));
    },
  }, el('label', {}, 'who ', user), el('label', {}, 'action ', action), el('button', { type: 'submit' }, 'Filter'));
  const pager = el('div.row');
  if (params.get('before')) pager.append(el('button.plain', { type: 'button', onclick: () => history.back() }, '← newer'));
  if (doc.next !== null && doc.next !== undefined) {
    const p = new URLSearchParams(params);
    p.set('before', String(doc.next));
    pager.append(link('/audit?' + p, 'older →'));
  }
  show(el('h1', {}, 'Audit trail'), apply,
    el('table', { id: 'audit' }, el('thead', {}, el('tr', {}, ...['when', 'who', 'from', 'what', 'hosts', 'status'].map((h) => el('th', {}, h)))), el('tbody', {}, rows)),
    doc.lines.length ? '' : el('p.muted', {}, 'Nothing recorded.'), pager);
}

async function route() {
  if (leave) { leave(); leave = null; }
  const path = location.pathname;
  const part = (prefix) => decodeURIComponent(path.slice(prefix.length));
  try {
    nav(true);
    if (path === '/' || path === '') await minionsPage();
    else if (path.startsWith('/minions/')) await minionPage(part('/minions/'));
    else if (path === '/run') runPage();
    else if (path === '/jobs') await jobsPage();
    else if (path.startsWith('/jobs/')) await jobPage(part('/jobs/'));
    else if (path.startsWith('/batches/')) await batchPage(part('/batches/'));
    else if (path === '/keys') await keysPage();
    else if (path === '/schedules') await schedulesPage();
    else if (path === '/audit') await auditPage();
    else if (path === '/notifications') await notificationsPage();
    else show(el('h1', {}, 'No such page'), el('p', {}, 'Nothing lives at ', el('code', {}, path), '.'),
      el('p', {}, link('/', 'Minions'), ' · ', link('/jobs', 'Jobs')));
  } catch (e) {
    if (e instanceof Unauthorized) loginPage(null);
    else show(message(e.message));
  }
}

route();
