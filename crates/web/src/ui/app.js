// The mempalace web UI (docs/web-ui.md): one page over the REST API
// (/api/v1), hash-routed, built with the DOM API only — no framework, no
// external URL, no inline script or style (the page's CSP forbids them),
// and data only ever goes in as text (textContent), never as markup.
'use strict';

(() => {
  const TOKEN_KEY = 'mempalace.token';
  const WORKSPACE_KEY = 'mempalace.workspace';
  const API = '/api/v1';

  // ---------------------------------------------------------------- DOM

  /** An element: `h('a', {href: '#/map', class: 'x'}, 'text', child)`. */
  function h(tag, props, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === 'class') el.className = value;
      else if (key === 'text') el.textContent = value;
      else if (key === 'testid') el.dataset.testid = value;
      else if (key === 'value') el.value = value;
      else if (key === 'checked') el.checked = Boolean(value);
      else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? '' : String(value));
    }
    add(el, children);
    return el;
  }

  function add(el, ...children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  const $ = (id) => document.getElementById(id);

  function fmtScore(x) {
    return typeof x === 'number' && Number.isFinite(x) ? x.toFixed(3) : '—';
  }

  function fmtTime(text) {
    if (!text) return '—';
    const t = String(text);
    // 2024-03-01T00:00:00.000000Z → 2024-03-01 00:00 (UTC)
    const m = t.match(/^(\d{4}-\d{2}-\d{2})(?:T(\d{2}:\d{2}))?/);
    if (!m) return t;
    return m[2] && m[2] !== '00:00' ? `${m[1]} ${m[2]}` : m[1];
  }

  function excerpt(text, max) {
    const flat = String(text || '').replace(/\s+/g, ' ').trim();
    return flat.length > max ? flat.slice(0, max - 1) + '…' : flat;
  }

  function hashFor(path, params) {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) {
      if (v !== null && v !== undefined && v !== '') query.set(k, v);
    }
    const qs = query.toString();
    return `#${path}${qs ? '?' + qs : ''}`;
  }

  const drawerHref = (id) => `#/drawer/${encodeURIComponent(id)}`;
  const entityHref = (name) => `#/entity/${encodeURIComponent(name)}`;

  function pill(text, kind, testid) {
    return h('span', { class: `pill pill-${kind || text}`, testid }, text);
  }

  function meter(value, max, label) {
    const v = Math.max(0, Math.min(Number(value) || 0, max));
    return h('meter', { min: 0, max, value: v, 'aria-label': label, title: label });
  }

  function section(title, testid, ...children) {
    return h('section', { class: 'card', testid }, h('h2', {}, title), children);
  }

  function empty(text, testid) {
    return h('p', { class: 'empty', testid: testid || 'empty' }, text);
  }

  // ---------------------------------------------------------------- API

  class ApiError extends Error {
    constructor(status, title, detail) {
      super(detail);
      this.status = status;
      this.title = title;
      this.detail = detail;
    }
  }

  async function problem(response) {
    const text = await response.text().catch(() => '');
    try {
      const body = JSON.parse(text);
      if (body && typeof body === 'object') {
        return { title: body.title || response.statusText, detail: body.detail || body.title || text };
      }
    } catch (_) {
      // not JSON: the transport's plain-text answers (401, 400 on a bad header)
    }
    return { title: response.statusText || `HTTP ${response.status}`, detail: text.trim() || `HTTP ${response.status}` };
  }

  /** Calls the API; throws ApiError (401 also opens the token form). */
  async function api(method, path, options) {
    const opts = options || {};
    const headers = { Accept: 'application/json' };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = `Bearer ${token}`;
    const workspace = sessionStorage.getItem(WORKSPACE_KEY);
    if (workspace) headers['Mempalace-Workspace'] = workspace;
    Object.assign(headers, opts.headers || {});
    let body;
    if (opts.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(opts.body);
    }
    let response;
    try {
      response = await fetch(API + path, { method, headers, body, cache: 'no-store', credentials: 'omit' });
    } catch (error) {
      throw new ApiError(0, 'No answer', `the server did not answer (${error.message}); is mempalace serve running?`);
    }
    if (response.status === 401) {
      const p = await problem(response);
      openToken(p.detail);
      throw new ApiError(401, 'Token needed', p.detail);
    }
    if (!response.ok) {
      const p = await problem(response);
      throw new ApiError(response.status, p.title, p.detail);
    }
    if (response.status === 204) return null;
    const type = response.headers.get('Content-Type') || '';
    return type.includes('json') ? response.json() : response.text();
  }

  const get = (path) => api('GET', path);

  // ------------------------------------------------------ messages, overlays

  function showError(error) {
    const detail = error instanceof ApiError ? error.detail : String((error && error.message) || error);
    const title = error instanceof ApiError ? `${error.title}${error.status ? ` (${error.status})` : ''}` : 'Error';
    $('error-title').textContent = title;
    $('error-detail').textContent = detail;
    $('error').hidden = false;
  }

  function clearError() {
    $('error').hidden = true;
  }

  let noticeTimer = 0;
  function notice(text) {
    const el = $('notice');
    el.textContent = text;
    el.hidden = false;
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(() => { el.hidden = true; }, 6000);
  }

  let overlayReturn = null;
  function openOverlay(id, focusId) {
    if ($(id).hidden) overlayReturn = document.activeElement;
    $(id).hidden = false;
    const target = $(focusId);
    if (target) target.focus();
  }

  function closeOverlay(id) {
    if ($(id).hidden) return false;
    $(id).hidden = true;
    if (overlayReturn && document.contains(overlayReturn)) overlayReturn.focus();
    overlayReturn = null;
    return true;
  }

  function openToken(message) {
    $('token-message').textContent = message
      || 'An API token (mempalace token create), kept in this tab only and sent as Authorization: Bearer.';
    if (!$('token-panel').hidden) return; // already asking: keep what is being typed
    $('token-input').value = '';
    $('workspace-input').value = sessionStorage.getItem(WORKSPACE_KEY) || '';
    openOverlay('token-panel', 'token-input');
  }

  function updateTokenButton() {
    $('settings-button').textContent = sessionStorage.getItem(TOKEN_KEY) ? 'Token ✓' : 'Token';
  }

  // ---------------------------------------------------------------- health

  async function loadHealth() {
    try {
      const health = await get('/health');
      $('health').textContent = `${health.caller} @ ${health.workspace} · ${health.backend} · ${health.drawers} drawers`;
      $('health').title = `mempalace ${health.version}, schema ${health.schema_version}`;
      return health;
    } catch (error) {
      $('health').textContent = error.status === 401 ? 'token needed' : 'offline';
      return null;
    }
  }

  // ---------------------------------------------------------------- lists

  /** Focusable items of the current view that j/k move between. */
  function navItems() {
    return Array.from($('view').querySelectorAll('.nav-item')).filter((el) => el.offsetParent !== null);
  }

  function moveSelection(step) {
    const items = navItems();
    if (!items.length) return;
    let index = items.indexOf(document.activeElement);
    if (index < 0) index = items.findIndex((el) => el.classList.contains('selected'));
    index = index < 0 ? (step > 0 ? 0 : items.length - 1) : Math.max(0, Math.min(items.length - 1, index + step));
    for (const el of items) el.classList.remove('selected');
    const item = items[index];
    item.classList.add('selected');
    item.focus();
    item.scrollIntoView({ block: 'nearest' });
  }

  // ---------------------------------------------------------------- views

  /** What the current view offers the keyboard: edit, cancel. */
  let current = {};
  let refreshTimer = 0;

  function breadcrumbs(parts) {
    const nav = h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumbs', testid: 'breadcrumbs' });
    parts.forEach((part, i) => {
      if (i) add(nav, h('span', { class: 'sep', 'aria-hidden': 'true' }, '›'));
      add(nav, part.href ? h('a', { href: part.href }, part.text) : h('span', {}, part.text));
    });
    return nav;
  }

  function heading(text, testid) {
    return h('h1', { id: 'view-title', testid: testid || 'view-title', tabindex: '-1' }, text);
  }

  // #/map
  async function viewMap() {
    const [taxonomy, stats] = await Promise.all([get('/taxonomy'), get('/kg/stats').catch(() => null)]);
    const root = h('div', { class: 'map', testid: 'map' });
    add(root, heading('Palace map'));
    add(root, h('p', { class: 'muted', testid: 'map-summary' },
      `${taxonomy.total_drawers} drawers in ${taxonomy.wings.length} wings · workspace ${taxonomy.workspace}`));
    if (!taxonomy.wings.length) {
      add(root, empty('The palace is empty: file a drawer with `mempalace add`, or mine a project with `mempalace mine`.'));
    }
    const grid = h('div', { class: 'wings' });
    for (const wing of taxonomy.wings) {
      const top = Math.max(1, ...wing.rooms.map((r) => r.drawers));
      const rooms = h('ul', { class: 'rooms' });
      for (const room of wing.rooms) {
        add(rooms, h('li', {},
          h('a', {
            class: 'nav-item room', href: hashFor('/drawers', { wing: wing.wing, room: room.room }),
            testid: `room-${wing.wing}-${room.room}`, id: `room-${wing.wing}-${room.room}`,
          },
          h('span', { class: 'name' }, room.room),
          meter(room.drawers, top, `${room.drawers} drawers`),
          h('span', { class: 'count', testid: 'room-count' }, String(room.drawers)))));
      }
      add(grid, h('section', { class: 'card wing', testid: `wing-${wing.wing}`, id: `wing-${wing.wing}` },
        h('h2', {},
          h('a', { class: 'nav-item', href: hashFor('/drawers', { wing: wing.wing }), testid: 'wing-link' }, wing.wing),
          h('span', { class: 'count', testid: 'wing-count' }, String(wing.drawers))),
        rooms));
    }
    add(root, grid);

    // The knowledge graph: counts, an entity form, the entities in facts.
    const kg = section('Knowledge graph', 'kg-panel');
    if (stats) {
      add(kg, h('p', { class: 'muted', testid: 'kg-summary' },
        `${stats.entities} entities · ${stats.triples} facts (${stats.current_facts} current, ${stats.expired_facts} ended)`));
    }
    const input = h('input', { id: 'entity-input', testid: 'entity-input', type: 'text', placeholder: 'Entity name, e.g. PostgreSQL', spellcheck: 'false' });
    add(kg, h('form', {
      class: 'inline', id: 'entity-form', autocomplete: 'off',
      onsubmit: (event) => {
        event.preventDefault();
        if (input.value.trim()) location.hash = entityHref(input.value.trim());
      },
    }, h('label', { class: 'sr', for: 'entity-input' }, 'Open an entity'), input,
    h('button', { id: 'entity-open', testid: 'entity-open', type: 'submit' }, 'Open entity')));
    const listed = await get('/kg/entities?limit=60').catch(() => null);
    if (listed && listed.entities.length) {
      add(kg, h('ul', { class: 'chips', testid: 'kg-entities' },
        listed.entities.map((e) => h('li', {},
          h('a', { class: 'chip nav-item', href: entityHref(e.name), testid: 'kg-entity' }, e.name,
            h('span', { class: 'count' }, String(e.facts + e.mentions)))))));
    }
    add(root, kg);
    return root;
  }

  function drawerRow(drawer) {
    return h('a', { class: 'nav-item row', href: drawerHref(drawer.id), testid: 'drawer-row', 'data-id': drawer.id },
      h('span', { class: 'place' }, `${drawer.wing} / ${drawer.room}`),
      h('span', { class: 'text' }, excerpt(drawer.content, 180)),
      h('span', { class: 'meta' }, pill(drawer.status), ' ', fmtTime(drawer.filed_at)));
  }

  // #/drawers?wing=&room=&status=&offset=
  async function viewDrawers(params) {
    const wing = params.get('wing') || '';
    const room = params.get('room') || '';
    const status = params.get('status') === 'hidden' ? 'hidden' : 'active';
    const offset = Math.max(0, parseInt(params.get('offset') || '0', 10) || 0);
    const limit = 50;
    const list = await get(`/drawers?${new URLSearchParams(Object.entries({ wing, room, status, offset: String(offset), limit: String(limit) }).filter(([, v]) => v !== ''))}`);
    const root = h('div', { class: 'drawers', testid: 'drawers' });
    const crumbs = [{ text: 'Map', href: '#/map' }];
    if (wing) crumbs.push({ text: wing, href: hashFor('/drawers', { wing }) });
    if (room) crumbs.push({ text: room });
    add(root, breadcrumbs(crumbs));
    add(root, heading(room ? `Drawers in ${wing} / ${room}` : wing ? `Drawers in ${wing}` : 'All drawers'));
    add(root, h('div', { class: 'tabs', role: 'tablist' },
      h('a', { href: hashFor('/drawers', { wing, room }), role: 'tab', 'aria-selected': String(status === 'active'), id: 'tab-active', testid: 'tab-active' }, 'Active'),
      h('a', { href: hashFor('/drawers', { wing, room, status: 'hidden' }), role: 'tab', 'aria-selected': String(status === 'hidden'), id: 'tab-hidden', testid: 'tab-hidden' }, 'Deleted, archived & superseded'),
      h('button', { type: 'button', id: 'new-drawer', testid: 'new-drawer', onclick: () => toggleNew(true) }, 'File a drawer')));
    const form = newDrawerForm(wing, room);
    add(root, form);
    const toggleNew = (open) => {
      form.hidden = !open;
      if (open) $('new-content').focus();
    };
    current.cancel = () => {
      if (form.hidden) return false;
      toggleNew(false);
      return true;
    };
    add(root, h('p', { class: 'muted', testid: 'drawers-summary' },
      list.total ? `${offset + 1}–${offset + list.drawers.length} of ${list.total}` : ''));
    if (!list.drawers.length) add(root, empty(status === 'hidden' ? 'Nothing deleted, archived or superseded here.' : 'No drawers here.'));
    add(root, h('div', { class: 'list', testid: 'drawer-list' }, list.drawers.map(drawerRow)));
    const pager = h('div', { class: 'pager' });
    if (offset > 0) {
      add(pager, h('a', { class: 'button', id: 'page-prev', testid: 'page-prev', href: hashFor('/drawers', { wing, room, status: status === 'hidden' ? 'hidden' : '', offset: String(Math.max(0, offset - limit)) }) }, '← Newer'));
    }
    if (list.next_offset !== null && list.next_offset !== undefined) {
      add(pager, h('a', { class: 'button', id: 'page-next', testid: 'page-next', href: hashFor('/drawers', { wing, room, status: status === 'hidden' ? 'hidden' : '', offset: String(list.next_offset) }) }, 'Older →'));
    }
    add(root, pager);
    return root;
  }

  function newDrawerForm(wing, room) {
    const content = h('textarea', { id: 'new-content', testid: 'new-content', rows: '5', required: true, maxlength: '10000' });
    const wingInput = h('input', { id: 'new-wing', testid: 'new-wing', type: 'text', required: true, value: wing, spellcheck: 'false' });
    const roomInput = h('input', { id: 'new-room', testid: 'new-room', type: 'text', required: true, value: room, spellcheck: 'false' });
    const form = h('form', {
      class: 'card editor', id: 'new-form', testid: 'new-form', hidden: true, autocomplete: 'off',
      onsubmit: async (event) => {
        event.preventDefault();
        try {
          const created = await api('POST', '/drawers', { body: { wing: wingInput.value.trim(), room: roomInput.value.trim(), content: content.value } });
          notice(created.created ? `Filed ${created.id}` : `Already filed: ${created.id}`);
          keepNotice = true;
          location.hash = drawerHref(created.id);
        } catch (error) {
          showError(error);
        }
      },
    },
    h('h2', {}, 'File a drawer'),
    h('label', { for: 'new-content' }, 'Text (verbatim)'), content,
    h('div', { class: 'two' },
      h('div', {}, h('label', { for: 'new-wing' }, 'Wing'), wingInput),
      h('div', {}, h('label', { for: 'new-room' }, 'Room'), roomInput)),
    h('div', { class: 'actions' },
      h('button', { type: 'submit', class: 'primary', id: 'new-save', testid: 'new-save' }, 'File it'),
      h('button', { type: 'button', id: 'new-cancel', testid: 'new-cancel', onclick: () => { form.hidden = true; } }, 'Cancel')));
    return form;
  }

  // #/drawer/ID
  async function viewDrawer(params, id) {
    const drawer = await get(`/drawers/${encodeURIComponent(id)}`);
    return renderDrawer(drawer);
  }

  function field(name, value, testid) {
    let shown = value;
    if (value instanceof Node) shown = value;
    else if (value === null || value === undefined || value === '') shown = '—';
    else if (Array.isArray(value)) shown = value.length ? value.join(', ') : '—';
    else if (typeof value === 'object') shown = Object.keys(value).length ? JSON.stringify(value) : '—';
    return [h('dt', {}, name), h('dd', { testid: testid || `field-${name}` }, shown instanceof Node ? shown : String(shown))];
  }

  function renderDrawer(drawer) {
    const root = h('div', { class: 'drawer', testid: 'drawer', 'data-id': drawer.id });
    add(root, breadcrumbs([
      { text: 'Map', href: '#/map' },
      { text: drawer.wing, href: hashFor('/drawers', { wing: drawer.wing }) },
      { text: drawer.room, href: hashFor('/drawers', { wing: drawer.wing, room: drawer.room }) },
      { text: drawer.id },
    ]));
    const active = drawer.status === 'active';
    add(root, h('div', { class: 'titlebar' },
      heading(drawer.id, 'drawer-id'),
      pill(drawer.status, null, 'drawer-status')));

    const toolbar = h('div', { class: 'toolbar', role: 'toolbar', 'aria-label': 'Drawer actions' },
      h('button', { type: 'button', id: 'edit-button', testid: 'edit-button', title: 'Edit (e)', onclick: () => startEdit() }, 'Edit'),
      active
        ? h('button', { type: 'button', id: 'delete-button', testid: 'delete-button', class: 'danger', onclick: () => askDelete() }, 'Delete…')
        : h('button', {
          type: 'button', id: 'restore-button', testid: 'restore-button', class: 'primary',
          disabled: drawer.status === 'superseded', title: drawer.status === 'superseded' ? 'A superseded drawer comes back by editing the newer one' : 'Make it active again',
          onclick: () => restore(),
        }, 'Restore'),
      h('a', { class: 'button', id: 'similar-link', testid: 'similar-link', href: hashFor('/search', { q: excerpt(drawer.content, 200) }) }, 'Find similar'));
    add(root, toolbar);
    if (drawer.status_reason) add(root, h('p', { class: 'muted', testid: 'status-reason' }, `Why: ${drawer.status_reason}`));

    const content = h('pre', { class: 'content', id: 'drawer-content', testid: 'drawer-content' }, drawer.content);

    // The editor: text, wing, room; PATCH sends only what changed.
    const editContent = h('textarea', { id: 'edit-content', testid: 'edit-content', rows: '10', maxlength: '10000', value: drawer.content });
    const editWing = h('input', { id: 'edit-wing', testid: 'edit-wing', type: 'text', value: drawer.wing, spellcheck: 'false' });
    const editRoom = h('input', { id: 'edit-room', testid: 'edit-room', type: 'text', value: drawer.room, spellcheck: 'false' });
    const reclassify = h('input', { id: 'edit-reclassify', testid: 'edit-reclassify', type: 'checkbox' });
    const editor = h('form', {
      class: 'card editor', id: 'edit-form', testid: 'edit-form', hidden: true, autocomplete: 'off',
      onsubmit: (event) => { event.preventDefault(); save(); },
    },
    h('label', { for: 'edit-content' }, 'Text'), editContent,
    h('div', { class: 'two' },
      h('div', {}, h('label', { for: 'edit-wing' }, 'Wing'), editWing),
      h('div', {}, h('label', { for: 'edit-room' }, 'Room'), editRoom)),
    h('label', { class: 'check' }, reclassify, ' Re-run the classifier on the new text'),
    h('div', { class: 'actions' },
      h('button', { type: 'submit', class: 'primary', id: 'edit-save', testid: 'edit-save', title: 'Ctrl+Enter' }, 'Save'),
      h('button', { type: 'button', id: 'edit-cancel', testid: 'edit-cancel', title: 'Esc', onclick: () => cancelEdit() }, 'Cancel'),
      h('span', { class: 'hint' }, h('kbd', {}, 'Ctrl'), ' ', h('kbd', {}, 'Enter'), ' saves · ', h('kbd', {}, 'Esc'), ' cancels')));

    // Deleting asks first: hidden and restorable, or removed for good.
    const reason = h('input', { id: 'delete-reason', testid: 'delete-reason', type: 'text', placeholder: 'optional' });
    const hard = h('input', { id: 'delete-hard', testid: 'delete-hard', type: 'checkbox' });
    const confirm = h('form', {
      class: 'card confirm', id: 'delete-confirm', testid: 'delete-confirm', hidden: true, role: 'alertdialog', 'aria-labelledby': 'delete-question',
      onsubmit: (event) => { event.preventDefault(); doDelete(); },
    },
    h('p', { id: 'delete-question' }, h('strong', {}, 'Delete this drawer?'),
      ' It is hidden from search and listings and stays restorable, unless you remove it for good.'),
    h('label', { for: 'delete-reason' }, 'Reason'), reason,
    h('label', { class: 'check' }, hard, ' Remove for good (cannot be undone)'),
    h('div', { class: 'actions' },
      h('button', { type: 'submit', class: 'danger', id: 'delete-confirm-button', testid: 'delete-confirm-button' }, 'Delete'),
      h('button', { type: 'button', id: 'delete-cancel', testid: 'delete-cancel', onclick: () => closeConfirm() }, 'Cancel')));

    const main = h('div', { class: 'col-main' }, confirm, content, editor);
    const entities = drawer.entities.length
      ? h('ul', { class: 'chips', testid: 'entities' }, drawer.entities.map((name) =>
        h('li', {}, h('a', { class: 'chip nav-item', href: entityHref(name), testid: 'entity-link', 'data-entity': name }, name))))
      : empty('No entities found in this text.', 'no-entities');
    add(main, section('Entities', 'entities-panel', entities));
    if (drawer.tags.length) {
      add(main, section('Tags', 'tags-panel', h('ul', { class: 'chips' }, drawer.tags.map((t) => h('li', {}, h('span', { class: 'chip' }, t))))));
    }

    const link = (id) => (id ? h('a', { href: drawerHref(id) }, id) : null);
    const fields = h('dl', { class: 'fields', id: 'drawer-fields', testid: 'drawer-fields' },
      field('workspace', drawer.workspace),
      field('wing', h('a', { href: hashFor('/drawers', { wing: drawer.wing }) }, drawer.wing)),
      field('room', h('a', { href: hashFor('/drawers', { wing: drawer.wing, room: drawer.room }) }, drawer.room)),
      field('hall', drawer.hall),
      field('status', drawer.status),
      field('status_reason', drawer.status_reason),
      field('memory_type', drawer.memory_type),
      field('importance', typeof drawer.importance === 'number' ? drawer.importance.toFixed(2) : drawer.importance),
      field('confidence', typeof drawer.confidence === 'number' ? drawer.confidence.toFixed(2) : drawer.confidence),
      field('state', drawer.state),
      field('pipeline_tier', drawer.pipeline_tier),
      field('superseded_by', link(drawer.superseded_by)),
      field('cluster_id', link(drawer.cluster_id)),
      field('source_file', drawer.source_file),
      field('added_by', drawer.added_by),
      field('owner', drawer.owner),
      field('session_id', drawer.session_id),
      field('filed_at', drawer.filed_at),
      field('updated_at', drawer.updated_at),
      field('last_accessed_at', drawer.last_accessed_at),
      field('access_count', drawer.access_count),
      field('embedded', drawer.embedded ? 'yes' : 'no'),
      field('tags', drawer.tags),
      field('context', drawer.context));
    add(root, h('div', { class: 'columns' }, main, h('aside', { class: 'col-side card' }, h('h2', {}, 'Fields'), fields)));

    function startEdit() {
      closeConfirm();
      editor.hidden = false;
      content.hidden = true;
      root.classList.add('editing');
      editContent.focus();
    }
    function cancelEdit() {
      if (editor.hidden) return false;
      editor.hidden = true;
      content.hidden = false;
      root.classList.remove('editing');
      editContent.value = drawer.content;
      editWing.value = drawer.wing;
      editRoom.value = drawer.room;
      $('edit-button').focus();
      return true;
    }
    async function save() {
      const patch = {};
      if (editContent.value !== drawer.content) patch.content = editContent.value;
      if (editWing.value.trim() !== drawer.wing) patch.wing = editWing.value.trim();
      if (editRoom.value.trim() !== drawer.room) patch.room = editRoom.value.trim();
      if (reclassify.checked) patch.reclassify = true;
      if (!Object.keys(patch).length) {
        cancelEdit();
        return;
      }
      try {
        const updated = await api('PATCH', `/drawers/${encodeURIComponent(drawer.id)}`, { body: patch });
        clearError();
        notice('Saved.');
        show(updated);
      } catch (error) {
        showError(error);
      }
    }
    function askDelete() {
      cancelEdit();
      confirm.hidden = false;
      $('delete-confirm-button').focus();
    }
    function closeConfirm() {
      if (confirm.hidden) return false;
      confirm.hidden = true;
      const back = $('delete-button');
      if (back) back.focus();
      return true;
    }
    async function doDelete() {
      const query = new URLSearchParams();
      if (hard.checked) query.set('hard', 'true');
      if (reason.value.trim()) query.set('reason', reason.value.trim());
      const qs = query.toString();
      try {
        await api('DELETE', `/drawers/${encodeURIComponent(drawer.id)}${qs ? '?' + qs : ''}`);
        clearError();
        if (hard.checked) {
          notice(`Removed ${drawer.id} for good.`);
          keepNotice = true;
          location.hash = hashFor('/drawers', { wing: drawer.wing, room: drawer.room });
          return;
        }
        notice('Deleted: hidden from search and listings. Restore brings it back.');
        show(await get(`/drawers/${encodeURIComponent(drawer.id)}`));
      } catch (error) {
        showError(error);
      }
    }
    async function restore() {
      try {
        const restored = await api('POST', `/drawers/${encodeURIComponent(drawer.id)}/restore`, { headers: { 'X-Requested-With': 'mempalace' } });
        clearError();
        notice('Restored: active again.');
        show(restored);
      } catch (error) {
        showError(error);
      }
    }
    function show(next) {
      const view = $('view');
      view.replaceChildren(renderDrawer(next));
      loadHealth();
      const focus = $('edit-button');
      if (focus) focus.focus();
    }

    current = {
      edit: startEdit,
      cancel: () => closeConfirm() || cancelEdit(),
      save: () => { if (!editor.hidden) save(); },
    };
    return root;
  }

  // #/search?q=&wing=&room=&fusion=&limit=
  // [key, label, explanation, value, meter maximum (none: no bar), shown text]
  const BREAKDOWN = [
    ['vector', 'Vector', 'cosine similarity of the query and the drawer', (b) => b.vector, 1, (b) => fmtScore(b.vector)],
    ['lexical', 'Keywords', 'BM25 as evidence: 1 − exp(−BM25 / 18)', (b) => b.lexical, 1,
      (b) => (b.bm25 === null || b.bm25 === undefined ? '—' : `${fmtScore(b.lexical)} · bm25 ${b.bm25.toFixed(2)}`)],
    ['graph', 'Graph', 'knowledge-graph score; 0.2 × graph enters the evidence', (b) => b.graph_weighted, 1,
      (b) => `${fmtScore(b.graph_weighted)} · raw ${fmtScore(b.graph)}`],
    ['date', 'Date', 'filed on a date the query names (within three days)', (b) => (b.date ? b.date : null), 1, (b) => fmtScore(b.date)],
    ['rrf', 'RRF', 'reciprocal-rank fusion score', (b) => b.rrf, null, (b) => fmtScore(b.rrf)],
    ['recency', 'Recency', "seed 0's recency factor", (b) => b.recency, null, (b) => fmtScore(b.recency)],
    ['rerank', 'Re-rank', "a re-ranker's score", (b) => b.rerank, 1, (b) => fmtScore(b.rerank)],
    ['base', 'Base', 'the evidence combined (noisy-OR), before boosts', (b) => b.base, 1, (b) => fmtScore(b.base)],
    ['real_world', 'Real world', 'boost for a real-world memory', (b) => b.real_world, null, (b) => `× ${b.real_world}`],
    ['owner_boost', 'Yours', "boost for the caller's own drawer", (b) => b.owner_boost, null, (b) => `× ${b.owner_boost}`],
    ['score', 'Final', 'the score results are ranked by', (b) => b.score, 1, (b) => fmtScore(b.score)],
  ];

  function breakdownTable(b) {
    const rows = [];
    for (const [key, label, why, value, max, text] of BREAKDOWN) {
      const v = value(b);
      const always = key === 'vector' || key === 'lexical' || key === 'graph' || key === 'base' || key === 'score';
      if (!always && (v === null || v === undefined)) continue;
      rows.push(h('tr', { class: `bd-${key}`, testid: `bd-${key}`, title: why },
        h('th', { scope: 'row' }, label),
        h('td', { class: 'gauge' }, max && typeof v === 'number' ? meter(v, max, `${label}: ${fmtScore(v)}`) : ''),
        h('td', { class: 'num' }, text(b))));
    }
    return h('table', { class: 'breakdown', testid: 'breakdown' },
      h('caption', {}, `Score breakdown · ${b.fusion} fusion`),
      h('tbody', {}, rows));
  }

  async function viewSearch(params) {
    const q = (params.get('q') || '').trim();
    const wing = params.get('wing') || '';
    const room = params.get('room') || '';
    const fusion = params.get('fusion') || 'weighted';
    const limit = params.get('limit') || '10';
    $('search-input').value = q;
    lastQuery = q;
    const root = h('div', { class: 'search-view', testid: 'search-view' });
    add(root, heading(q ? `Search: ${q}` : 'Search'));

    const wingInput = h('input', { id: 'filter-wing', testid: 'filter-wing', type: 'text', value: wing, placeholder: 'any', spellcheck: 'false' });
    const roomInput = h('input', { id: 'filter-room', testid: 'filter-room', type: 'text', value: room, placeholder: 'any', spellcheck: 'false' });
    const fusionSelect = h('select', { id: 'filter-fusion', testid: 'filter-fusion' },
      ['weighted', 'rrf', 'seed0'].map((f) => h('option', { value: f, selected: f === fusion }, f)));
    const limitSelect = h('select', { id: 'filter-limit', testid: 'filter-limit' },
      ['5', '10', '20', '50'].map((n) => h('option', { value: n, selected: n === limit }, n)));
    add(root, h('form', {
      class: 'filters', id: 'filter-form', autocomplete: 'off',
      onsubmit: (event) => {
        event.preventDefault();
        location.hash = hashFor('/search', { q: $('search-input').value.trim() || q, wing: wingInput.value.trim(), room: roomInput.value.trim(), fusion: fusionSelect.value === 'weighted' ? '' : fusionSelect.value, limit: limitSelect.value === '10' ? '' : limitSelect.value });
      },
    },
    h('label', { for: 'filter-wing' }, 'Wing'), wingInput,
    h('label', { for: 'filter-room' }, 'Room'), roomInput,
    h('label', { for: 'filter-fusion' }, 'Fusion'), fusionSelect,
    h('label', { for: 'filter-limit' }, 'Results'), limitSelect,
    h('button', { type: 'submit', id: 'filter-apply', testid: 'filter-apply' }, 'Apply')));

    if (!q) {
      add(root, empty('Type a query in the search box (press / to get there). Results show how each score was made.', 'search-empty'));
      return root;
    }
    const query = new URLSearchParams({ q, limit });
    if (wing) query.set('wing', wing);
    if (room) query.set('room', room);
    if (fusion !== 'weighted') query.set('fusion', fusion);
    const found = await get(`/search?${query}`);
    add(root, h('p', { class: 'muted', testid: 'search-summary' },
      `${found.results.length} results · ${found.mode} · ${found.candidates} candidates`));
    if (!found.results.length) add(root, empty('Nothing found.', 'no-results'));
    const list = h('ol', { class: 'results', testid: 'results' });
    for (const result of found.results) {
      const d = result.drawer;
      add(list, h('li', { class: 'result card', testid: 'result', 'data-id': d.id },
        h('div', { class: 'result-text' },
          h('a', { class: 'nav-item result-link', href: drawerHref(d.id), testid: 'result-link' },
            h('span', { class: 'score', testid: 'result-score', title: 'final score' }, fmtScore(result.score)),
            h('span', { class: 'place' }, `${d.wing} / ${d.room}`),
            d.memory_type ? pill(d.memory_type, 'type') : null),
          h('p', { class: 'snippet', testid: 'result-text' }, excerpt(d.content, 320)),
          d.entities.length
            ? h('ul', { class: 'chips small' }, d.entities.slice(0, 8).map((name) => h('li', {}, h('a', { class: 'chip', href: entityHref(name) }, name))))
            : null),
        breakdownTable(result.breakdown)));
    }
    add(root, list);
    return root;
  }

  // #/entity/NAME
  async function viewEntity(params, name) {
    const asOf = params.get('as_of') || '';
    const [facts, timeline] = await Promise.all([
      get(`/kg/entities/${encodeURIComponent(name)}${asOf ? `?as_of=${encodeURIComponent(asOf)}` : ''}`),
      get(`/kg/timeline?entity=${encodeURIComponent(name)}`),
    ]);
    const root = h('div', { class: 'entity', testid: 'entity', 'data-entity': name });
    add(root, breadcrumbs([{ text: 'Map', href: '#/map' }, { text: 'Knowledge graph' }, { text: name }]));
    add(root, heading(name, 'entity-name'));
    const asOfInput = h('input', { id: 'entity-asof', testid: 'entity-asof', type: 'date', value: asOf });
    add(root, h('div', { class: 'toolbar' },
      h('a', { class: 'button', id: 'entity-search', testid: 'entity-search', href: hashFor('/search', { q: name }) }, `Drawers about ${name}`),
      h('form', {
        class: 'inline', id: 'asof-form',
        onsubmit: (event) => { event.preventDefault(); location.hash = hashFor(`/entity/${encodeURIComponent(name)}`, { as_of: asOfInput.value }); },
      }, h('label', { for: 'entity-asof' }, 'True on'), asOfInput,
      h('button', { type: 'submit', id: 'asof-apply', testid: 'asof-apply' }, 'Show'),
      asOf ? h('a', { href: entityHref(name), id: 'asof-clear', testid: 'asof-clear' }, 'all facts') : null)));

    const other = (value) => (value === name ? h('strong', {}, value) : h('a', { href: entityHref(value) }, value));
    const rows = facts.facts.map((f) => h('tr', { testid: 'fact', class: f.current ? 'current' : 'ended', 'data-id': f.id },
      h('td', {}, other(f.subject)),
      h('td', { class: 'predicate' }, f.predicate.replace(/_/g, ' ')),
      h('td', {}, other(f.object)),
      h('td', {}, fmtTime(f.valid_from)),
      h('td', {}, fmtTime(f.valid_to)),
      h('td', {}, pill(f.current ? 'current' : 'ended')),
      h('td', { class: 'num' }, fmtScore(f.confidence)),
      h('td', {}, f.source_drawer_id ? h('a', { href: drawerHref(f.source_drawer_id), class: 'nav-item' }, 'drawer') : '—')));
    add(root, section(asOf ? `Facts true on ${asOf}` : 'Facts', 'facts-panel',
      rows.length
        ? h('table', { class: 'facts', id: 'facts', testid: 'facts' },
          h('thead', {}, h('tr', {}, ['Subject', 'Relation', 'Object', 'From', 'To', 'Now', 'Confidence', 'Source'].map((t) => h('th', { scope: 'col' }, t)))),
          h('tbody', {}, rows))
        : empty(`No facts about ${name}${asOf ? ` on ${asOf}` : ''}.`, 'no-facts')));

    const items = timeline.facts.map((f) => h('li', { class: f.current ? 'current' : 'ended', testid: 'timeline-item' },
      h('div', { class: 'when' }, fmtTime(f.valid_from) === '—' ? 'since ?' : fmtTime(f.valid_from),
        h('span', { class: 'until' }, f.valid_to ? ` → ${fmtTime(f.valid_to)}` : ' → now')),
      h('div', { class: 'what' }, other(f.subject), ' ', h('em', {}, f.predicate.replace(/_/g, ' ')), ' ', other(f.object))));
    add(root, section('Timeline', 'timeline-panel',
      items.length ? h('ol', { class: 'timeline', id: 'timeline', testid: 'timeline' }, items) : empty('No facts in time.', 'no-timeline')));
    return root;
  }

  // #/conflicts
  async function viewConflicts() {
    const conflicts = await get('/conflicts');
    const root = h('div', { class: 'conflicts', testid: 'conflicts' });
    add(root, heading('Duplicates and conflicts'));
    add(root, h('p', { class: 'muted' }, 'What the background jobs set aside: drawers a newer one contradicted (superseded), and near-duplicates merged into the drawer kept.'));
    const pairs = (list, label, testid) => (list.length
      ? h('div', { class: 'pairs', testid }, list.map((pair) => h('div', { class: 'pair', testid: 'conflict-pair' },
        h('div', { class: 'side set-aside' },
          h('div', { class: 'label' }, label, ' ', pill(pair.drawer.status)),
          h('a', { class: 'nav-item', href: drawerHref(pair.drawer.id), testid: 'pair-drawer' }, excerpt(pair.drawer.content, 220)),
          h('div', { class: 'meta' }, `${pair.drawer.wing} / ${pair.drawer.room} · ${fmtTime(pair.drawer.filed_at)}`)),
        h('div', { class: 'arrow', 'aria-hidden': 'true' }, '→'),
        h('div', { class: 'side kept' },
          h('div', { class: 'label' }, 'kept'),
          pair.kept
            ? [h('a', { class: 'nav-item', href: drawerHref(pair.kept.id), testid: 'pair-kept' }, excerpt(pair.kept.content, 220)),
              h('div', { class: 'meta' }, `${pair.kept.wing} / ${pair.kept.room} · ${fmtTime(pair.kept.filed_at)}`)]
            : h('span', { class: 'muted' }, 'no longer there')))))
      : null);
    add(root, section(`Near-duplicates merged (${conflicts.merged.length})`, 'merged-panel',
      pairs(conflicts.merged, 'repeated', 'merged') || empty('No near-duplicates merged.', 'no-merged')));
    add(root, section(`Superseded by newer drawers (${conflicts.superseded.length})`, 'superseded-panel',
      pairs(conflicts.superseded, 'older', 'superseded') || empty('No drawer superseded.', 'no-superseded')));
    return root;
  }

  // #/jobs
  function counts(title, object, testid) {
    const entries = Object.entries(object || {});
    const total = entries.reduce((sum, [, n]) => sum + n, 0);
    return section(title, testid, h('table', { class: 'counts', id: testid, testid: `${testid}-table` },
      h('tbody', {}, entries.map(([name, n]) => h('tr', { testid: `${testid}-${name}` },
        h('th', { scope: 'row' }, name),
        h('td', { class: 'gauge' }, meter(n, Math.max(1, total), `${n} of ${total}`)),
        h('td', { class: 'num' }, String(n)))))));
  }

  async function viewJobs() {
    const [jobs, health] = await Promise.all([get('/jobs'), get('/health').catch(() => null)]);
    const root = h('div', { class: 'jobs', testid: 'jobs' });
    add(root, heading('Jobs'));
    add(root, h('p', { class: 'muted', testid: 'jobs-summary' },
      `${jobs.claimed} drawers claimed by a worker now · ${jobs.memories} active memories`,
      health ? ` · ${health.backend}, schema ${health.schema_version}, mempalace ${health.version}` : '',
      ' · refreshes every 5 s'));
    add(root, h('div', { class: 'grid3' },
      counts('Cold path: drawers by state', jobs.by_state, 'jobs-state'),
      counts('Classified by tier', jobs.by_tier, 'jobs-tier'),
      counts('Drawers by status', jobs.by_status, 'jobs-status')));
    const runs = jobs.last_runs || [];
    add(root, section('Periodic jobs: latest run', 'runs-panel', runs.length
      ? h('table', { class: 'runs', id: 'jobs-runs', testid: 'jobs-runs' },
        h('thead', {}, h('tr', {}, ['Job', 'Started', 'Finished', 'Tick', 'Worker'].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, runs.map((run) => h('tr', { testid: `run-${run.job}` },
          h('td', {}, run.job),
          h('td', {}, run.started_at),
          h('td', {}, run.finished ? pill('finished', 'active') : pill('running', 'raw')),
          h('td', { class: 'num' }, String(run.tick)),
          h('td', {}, run.holder)))))
      : empty('No periodic job has run yet (mempalace work, or serve without --no-workers).', 'no-runs')));
    refreshTimer = setTimeout(() => { if (parseHash().path === '/jobs') route(true); }, 5000);
    return root;
  }

  // ---------------------------------------------------------------- routing

  const ROUTES = [
    [/^\/map$/, 'map', 'Map', viewMap],
    [/^\/drawers$/, 'drawers', 'Drawers', viewDrawers],
    [/^\/drawer\/([^/]+)$/, 'drawers', 'Drawer', viewDrawer],
    [/^\/search$/, 'search', 'Search', viewSearch],
    [/^\/entity\/([^/]+)$/, 'map', 'Entity', viewEntity],
    [/^\/conflicts$/, 'conflicts', 'Conflicts', viewConflicts],
    [/^\/jobs$/, 'jobs', 'Jobs', viewJobs],
  ];

  let lastQuery = '';
  let generation = 0;
  let keepNotice = false; // a notice given just before navigating survives it
  let focusSearch = false; // g s: the search box keeps the focus

  function parseHash() {
    const raw = location.hash.replace(/^#/, '') || '/map';
    const at = raw.indexOf('?');
    return { path: at < 0 ? raw : raw.slice(0, at), params: new URLSearchParams(at < 0 ? '' : raw.slice(at + 1)) };
  }

  async function route(quiet) {
    const run = ++generation;
    clearTimeout(refreshTimer);
    const { path, params } = parseHash();
    const found = ROUTES.map((r) => [r, path.match(r[0])]).find(([, m]) => m);
    if (!found) {
      location.replace('#/map');
      return;
    }
    const [[, nav, title, view], match] = found;
    const args = match.slice(1).map((part) => {
      try { return decodeURIComponent(part); } catch (_) { return part; }
    });
    for (const link of document.querySelectorAll('#nav a')) {
      if (link.dataset.route === nav) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
    const target = $('view');
    if (!quiet) {
      current = {};
      clearError();
      if (!keepNotice) $('notice').hidden = true;
      keepNotice = false;
      target.setAttribute('aria-busy', 'true');
      target.dataset.view = '';
      target.replaceChildren(h('p', { class: 'loading', testid: 'loading' }, 'Loading…'));
    }
    try {
      const keep = quiet ? current : null;
      const node = await view(params, ...args);
      if (run !== generation) return;
      if (keep) current = Object.assign(keep, current);
      target.replaceChildren(node);
      target.dataset.view = view.name.replace(/^view/, '').toLowerCase();
      document.title = `${args[0] ? `${args[0]} · ` : ''}${title} · mempalace`;
      if (!quiet) {
        const first = focusSearch ? $('search-input') : $('view-title');
        focusSearch = false;
        if (first) first.focus({ preventScroll: true });
        window.scrollTo(0, 0);
      }
    } catch (error) {
      if (run !== generation) return;
      target.dataset.view = 'error';
      target.replaceChildren(h('div', { class: 'card failed', testid: 'view-error' },
        h('h1', { id: 'view-title', tabindex: '-1' }, error.status === 401 ? 'Token needed' : 'Could not load this view'),
        h('p', { testid: 'view-error-detail' }, error.detail || error.message || String(error)),
        h('p', {}, h('a', { href: '#/map' }, 'Back to the map'), ' · ',
          h('button', { type: 'button', id: 'retry', testid: 'retry', onclick: () => route() }, 'Retry'))));
    } finally {
      if (run === generation) target.removeAttribute('aria-busy');
    }
  }

  // ---------------------------------------------------------------- keyboard

  let pendingG = 0;

  function typing(el) {
    return el && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT' || el.isContentEditable);
  }

  function escape() {
    if (closeOverlay('help-panel') || closeOverlay('token-panel')) return;
    if (current.cancel && current.cancel()) return;
    if (!$('error').hidden) {
      clearError();
      return;
    }
    if (typing(document.activeElement)) {
      document.activeElement.blur();
      return;
    }
    if (parseHash().path !== '/map') history.back();
  }

  function onKey(event) {
    if (event.defaultPrevented) return;
    if (event.key === 'Escape') {
      event.preventDefault();
      escape();
      return;
    }
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey) && current.save) {
      event.preventDefault();
      current.save();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (!$('token-panel').hidden) return;
    const key = event.key;
    if (pendingG) {
      clearTimeout(pendingG);
      pendingG = 0;
      const to = { m: '#/map', d: '#/drawers', s: hashFor('/search', { q: lastQuery }), c: '#/conflicts', j: '#/jobs' }[key];
      if (to) {
        event.preventDefault();
        focusSearch = key === 's';
        if (location.hash === to) route();
        else location.hash = to;
      }
      return;
    }
    switch (key) {
      case '/':
        event.preventDefault();
        $('search-input').focus();
        $('search-input').select();
        break;
      case 'g':
        pendingG = setTimeout(() => { pendingG = 0; }, 1500);
        break;
      case 'j':
        event.preventDefault();
        moveSelection(1);
        break;
      case 'k':
        event.preventDefault();
        moveSelection(-1);
        break;
      case 'e':
        if (current.edit) {
          event.preventDefault();
          current.edit();
        }
        break;
      case 'r':
        event.preventDefault();
        route();
        break;
      case '?':
        event.preventDefault();
        if (!closeOverlay('help-panel')) openOverlay('help-panel', 'help-close');
        break;
      case 'Enter': {
        const selected = $('view').querySelector('.nav-item.selected');
        if (selected && document.activeElement === document.body) {
          event.preventDefault();
          selected.click();
        }
        break;
      }
      default:
        break;
    }
  }

  // ---------------------------------------------------------------- start

  function start() {
    $('search-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const q = $('search-input').value.trim();
      if (!q) return;
      const { path, params } = parseHash();
      const keep = path === '/search' ? { wing: params.get('wing'), room: params.get('room'), fusion: params.get('fusion'), limit: params.get('limit') } : {};
      const to = hashFor('/search', Object.assign(keep, { q }));
      if (location.hash === to) route();
      else location.hash = to;
    });
    $('token-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const token = $('token-input').value.trim();
      const workspace = $('workspace-input').value.trim();
      if (token) sessionStorage.setItem(TOKEN_KEY, token);
      if (workspace) sessionStorage.setItem(WORKSPACE_KEY, workspace);
      else sessionStorage.removeItem(WORKSPACE_KEY);
      $('token-input').value = '';
      closeOverlay('token-panel');
      updateTokenButton();
      loadHealth();
      route();
    });
    $('token-forget').addEventListener('click', () => {
      sessionStorage.removeItem(TOKEN_KEY);
      $('token-input').value = '';
      updateTokenButton();
      closeOverlay('token-panel');
      notice('Token forgotten.');
      loadHealth();
      route();
    });
    $('token-cancel').addEventListener('click', () => closeOverlay('token-panel'));
    $('settings-button').addEventListener('click', () => openToken(''));
    $('help-button').addEventListener('click', () => openOverlay('help-panel', 'help-close'));
    $('help-close').addEventListener('click', () => closeOverlay('help-panel'));
    $('error-close').addEventListener('click', clearError);
    $('skip-link').addEventListener('click', (event) => {
      event.preventDefault();
      $('view').focus();
    });
    for (const id of ['token-panel', 'help-panel']) {
      $(id).addEventListener('click', (event) => { if (event.target === $(id)) closeOverlay(id); });
    }
    document.addEventListener('keydown', onKey);
    window.addEventListener('hashchange', () => route());
    updateTokenButton();
    if (!location.hash) history.replaceState(null, '', '#/map');
    loadHealth();
    route();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
