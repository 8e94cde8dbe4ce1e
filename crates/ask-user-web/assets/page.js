"use strict";
(() => {
  // Every text from a model or a log is inserted as a text node, never as HTML, and its
  // invisible characters (controls, bidirectional and zero-width marks) are shown as escapes.
  const hidden = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;
  const visible = (text) => String(text == null ? "" : text)
    .replace(hidden, (c) => "\\u{" + c.codePointAt(0).toString(16) + "}");

  const token = new URLSearchParams(location.search).get("token") || "";
  const randomId = () => {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  };
  const client = randomId();
  const list = document.getElementById("cards");
  const statusLine = document.getElementById("status");
  const empty = document.getElementById("empty");
  const cards = new Map();
  let source = null;
  let ended = false;

  const el = (tag, props, ...children) => {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "text") node.textContent = visible(value);
      else if (name in node && typeof value !== "string") node[name] = value;
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child == null) continue;
      node.append(typeof child === "string" ? document.createTextNode(visible(child)) : child);
    }
    return node;
  };
  const keyOf = (data) => JSON.stringify([data.session, data.callId]);
  const path = (...parts) => parts.map(encodeURIComponent).join("/");
  const withToken = (url) => url + (url.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token);

  const post = async (url, body) => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "x-ask-user-token": token },
      body: JSON.stringify(body),
      credentials: "omit",
      cache: "no-store",
    });
    let reply = {};
    try { reply = await response.json(); } catch (_) { reply = {}; }
    return { ok: response.ok, reply };
  };

  const refresh = () => {
    // An agent's group goes with its last card.
    for (const [agent, group] of groups) {
      if (!group.querySelector("article")) { group.remove(); groups.delete(agent); }
    }
    const waiting = [...cards.values()].filter((c) => !c.done).length;
    empty.hidden = cards.size > 0;
    if (source && source.readyState === EventSource.OPEN) {
      statusLine.textContent = waiting === 0 ? "Connected." : `Connected: ${waiting} waiting.`;
    }
  };

  const seconds = (ms) => Math.max(0, Math.ceil(ms / 1000));

  // Where the question comes from (its session's client and folder) and how long it has waited.
  const ageText = (ms) => {
    const s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return `${s}s`;
    if (s < 3600) return `${Math.floor(s / 60)}m`;
    if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
    return `${Math.floor(s / 86400)}d`;
  };
  // The session's label is `agent · folder` (the inbox's: the client's name and version, its
  // folder); the agent heads the question's group, and the card names the folder, the session
  // and the age, each a field that wraps as a whole.
  const labelParts = (data) => (data.label ? String(data.label).split(" · ") : []);
  const agentOf = (data) => labelParts(data)[0] || "";
  const sessionText = (session) => {
    const name = String(session || "").replace(/\.jsonl$/, "");
    const id = /([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.exec(name);
    return `session ${id ? id[1] : name}`;
  };
  const originFields = (data) => [
    ...labelParts(data).slice(1),
    data.session ? sessionText(data.session) : null,
    typeof data.askedAtMs === "number" ? `asked ${ageText(Date.now() - data.askedAtMs)} ago` : null,
  ].filter(Boolean);
  const showOrigin = (card) => {
    const fields = originFields(card.data);
    const shown = [...card.origin.children].map((f) => f.textContent);
    if (shown.length === fields.length && shown.every((t, i) => t === visible(fields[i]))) return;
    card.origin.replaceChildren(...fields.map((field) => el("span", { class: "field", title: visible(field), text: field })));
    card.origin.title = visible(card.data.session || "");
  };
  const groups = new Map();
  const groupOf = (data) => {
    const agent = agentOf(data);
    let group = groups.get(agent);
    if (!group) {
      group = el("section", { class: "group", "data-agent": agent },
        agent ? el("h2", { class: "agent", text: agent }) : null);
      groups.set(agent, group);
      list.append(group);
    }
    return group;
  };

  const clockText = (card) => {
    const data = card.data;
    if (data.state === "continued") return data.replyQueued ? "answer sent" : "pending: answer any time";
    if (!data.timed) return "the agent is waiting";
    if (card.held) return "held: take your time";
    if (card.deadline == null) return "answer soon";
    const left = card.deadline - performance.now();
    return left > 0 ? `${seconds(left)} s left` : "pending: answer any time";
  };

  const tick = () => {
    for (const card of cards.values()) {
      if (!card.done) {
        card.clock.textContent = clockText(card);
        showOrigin(card);
      }
    }
  };
  setInterval(tick, 250);

  const questionBlock = (question, index, card) => {
    const name = `q${index}`;
    const options = Array.isArray(question.options) ? question.options : [];
    const multi = question.multiSelect === true;
    const legend = el("legend", {}, question.header ? el("span", { class: "chip header", text: question.header }) : null,
      question.header ? " " : null, question.question);
    const block = el("fieldset", { class: "q", "data-question": question.id }, legend);
    if (question.detail) block.append(el("p", { class: "detail", text: question.detail }));
    for (const option of options) {
      const input = el("input", { type: multi ? "checkbox" : "radio", name, value: option.label });
      const label = el("label", { class: "opt" }, input, el("span", { class: "label", text: option.label }),
        option.description ? el("span", { class: "desc", text: option.description }) : null);
      block.append(label);
    }
    if (options.length > 0) {
      block.append(el("label", { class: "other" }, el("span", { text: "Other (your own answer)" }),
        el("input", { type: "text", name: `${name}-other`, maxLength: 4000, autocomplete: "off" })));
    } else {
      block.append(el("label", { class: "free" }, el("span", { text: "Your answer" }),
        el("textarea", { name: `${name}-text`, rows: 3, maxLength: 4000 })));
    }
    const skip = el("input", { type: "checkbox", name: `${name}-skip` });
    skip.addEventListener("change", () => {
      for (const input of block.querySelectorAll("input:not([name$='-skip']), textarea")) input.disabled = skip.checked;
    });
    block.append(el("label", { class: "skip" }, skip, " Skip this question"));
    return block;
  };

  const collect = (card) => {
    const answers = [];
    card.data.questions.forEach((question, index) => {
      const name = `q${index}`;
      const form = card.form;
      if (form.querySelector(`input[name="${name}-skip"]`).checked) {
        answers.push({ id: question.id, selected: [] });
        return;
      }
      const selected = [...form.querySelectorAll(`input[name="${name}"]:checked`)].map((i) => i.value);
      const otherInput = form.querySelector(`[name="${name}-other"], [name="${name}-text"]`);
      const custom = otherInput ? otherInput.value.trim() : "";
      if (selected.length === 0 && custom === "") {
        throw new Error(`Answer “${visible(question.question)}”, or skip it.`);
      }
      // A single-select question's own answer replaces the choice (SPEC §1.5).
      const multi = question.multiSelect === true;
      const item = { id: question.id, selected: custom !== "" && !multi ? [] : selected };
      if (custom !== "") item.custom = custom;
      answers.push(item);
    });
    return answers;
  };

  const pairs = (questions, answers) => {
    const dl = el("dl", { class: "pairs" });
    for (const question of questions) {
      const answer = (answers || []).find((a) => a && a.id === question.id);
      let text = "(skipped)";
      if (answer) {
        const parts = [...(Array.isArray(answer.selected) ? answer.selected : [])];
        if (typeof answer.custom === "string" && answer.custom !== "") parts.push(answer.custom);
        if (parts.length > 0) text = parts.join(", ");
      }
      dl.append(el("dt", { text: question.question }), el("dd", { text }));
    }
    return dl;
  };

  const hold = async (card) => {
    if (card.held || card.holding || card.data.state !== "open" || !card.data.timed) return;
    card.holding = true;
    let result = { ok: false, reply: {} };
    try {
      result = await post(path("cards", card.data.callId, "hold"), { session: card.data.session, client });
    } catch (_) {
      // Offline for a moment: the next input tries again.
    } finally {
      card.holding = false;
    }
    const { ok, reply } = result;
    if (ok && reply.held) {
      card.held = true;
      card.holdButton.disabled = true;
      card.holdButton.textContent = "Holding";
      tick();
    }
  };

  const finish = (card, text, ok, answers) => {
    card.done = true;
    card.article.dataset.state = "done";
    card.form.replaceChildren(el("p", { class: ok ? "message ok" : "message", role: "status", text }));
    if (answers) card.form.append(pairs(card.data.questions, answers));
    card.clock.textContent = "";
    refresh();
  };

  const removeLater = (card) => {
    setTimeout(() => {
      card.article.remove();
      if (cards.get(card.key) === card) cards.delete(card.key);
      refresh();
    }, 6000);
  };

  const submit = async (card) => {
    const message = card.message;
    message.className = "message";
    let answers;
    try { answers = collect(card); } catch (error) { message.textContent = error.message; return; }
    card.submitButton.disabled = true;
    card.submitting = true;
    message.textContent = "Sending…";
    let result;
    try {
      result = await post(path("cards", card.data.callId, "answer"), { session: card.data.session, client, answers });
    } catch (_) {
      result = { ok: false, reply: { message: "The server could not be reached; try again." } };
    }
    card.submitButton.disabled = false;
    card.submitting = false;
    if (result.ok) {
      card.mine = true;
      finish(card, result.reply.path === "late"
        ? "Sent. The agent reads your answer in its next turn."
        : "Answered.", true, answers);
      return;
    }
    if (result.reply.code === "NOT_WAITING") {
      // Answered elsewhere or closed: nothing here can change that.
      finish(card, visible(result.reply.message), false, null);
      removeLater(card);
      return;
    }
    message.textContent = visible(result.reply.message || "The answer was not taken.");
  };

  const build = (data) => {
    const card = { key: keyOf(data), data, done: false, held: false, deadline: null };
    card.clock = el("span", { class: "clock" });
    card.origin = el("span", { class: "origin" });
    const chip = el("span", { class: "chip", text: data.questions.length > 1 ? `${data.questions.length} questions` : "Question" });
    card.form = el("form", { novalidate: true });
    data.questions.forEach((question, index) => card.form.append(questionBlock(question, index, card)));
    card.submitButton = el("button", { type: "submit", class: "submit", text: "Submit" });
    card.holdButton = el("button", { type: "button", class: "hold", text: "Take time" });
    card.holdButton.addEventListener("click", () => hold(card));
    card.message = el("p", { class: "message", role: "alert" });
    card.form.append(el("div", { class: "actions" }, card.submitButton, card.holdButton), card.message);
    card.form.addEventListener("submit", (event) => { event.preventDefault(); submit(card); });
    card.form.addEventListener("input", () => hold(card));
    card.article = el("article", { class: "card", "data-call-id": data.callId, "data-session": data.session },
      el("div", { class: "top" }, chip, card.origin, card.clock), card.form);
    groupOf(data).append(card.article);
    cards.set(card.key, card);
    if (cards.size === 1) {
      const first = card.form.querySelector("input, textarea");
      if (first) first.focus({ preventScroll: true });
    }
    return card;
  };

  const upsert = (data) => {
    let card = cards.get(keyOf(data));
    if (card && card.done) return;
    if (!card) card = build(data);
    card.data = data;
    card.article.dataset.state = data.state;
    if (data.state === "open" && data.timed && typeof data.remainingMs === "number") {
      card.deadline = performance.now() + data.remainingMs;
    }
    card.holdButton.hidden = !(data.state === "open" && data.timed);
    if (data.state === "continued" && data.replyQueued) {
      card.message.className = "message ok";
      card.message.textContent = "An answer was sent; the agent reads it in its next turn.";
    }
    card.clock.textContent = clockText(card);
    // A label that names another agent now (the session's host told more) moves the card.
    const group = groupOf(data);
    if (card.article.parentNode !== group) group.append(card.article);
    showOrigin(card);
    refresh();
  };

  const handlers = {
    snapshot(data) {
      const present = new Set(data.cards.map(keyOf));
      for (const card of [...cards.values()]) {
        if (!card.done && !present.has(card.key)) {
          card.article.remove();
          cards.delete(card.key);
        }
      }
      data.cards.forEach(upsert);
      refresh();
    },
    card: upsert,
    settled(data) {
      const card = cards.get(keyOf(data));
      // This page's own answer is told by its reply, not as someone else's.
      if (!card || card.done || card.submitting) return;
      finish(card, data.answered ? `Answered ${visible(data.answered)}.` : `Answered elsewhere (${visible(data.by)}).`, true, null);
      removeLater(card);
    },
    expired(data) {
      const card = cards.get(keyOf(data));
      if (!card || card.done) return;
      finish(card, "This question was closed without an answer.", false, null);
      removeLater(card);
    },
    ended(data) {
      if (data.back) {
        // The inbox stopped and comes back at this address with this token: the event stream
        // reconnects by itself (every `retry`) and the snapshot shows the questions of then.
        statusLine.textContent = "The inbox stopped: this page reconnects when it is back…";
        return;
      }
      // The host stopped serving: nothing more will come, so the page stops reconnecting.
      ended = true;
      if (source) { source.close(); source = null; }
      statusLine.textContent = "The session has ended: nothing more will come to this page.";
      empty.textContent = "No question is waiting.";
    },
    queued(data) {
      const card = cards.get(keyOf(data));
      if (!card || card.done || card.submitting) return;
      finish(card, "Answered on another page. The agent reads the answer in its next turn.", true, data.answers);
    },
  };

  const connect = () => {
    if (source) source.close();
    source = new EventSource(withToken("events?client=" + encodeURIComponent(client)));
    for (const [name, handle] of Object.entries(handlers)) {
      source.addEventListener(name, (event) => {
        let data;
        try { data = JSON.parse(event.data); } catch (_) { return; }
        handle(data);
      });
    }
    source.addEventListener("open", refresh);
    source.addEventListener("error", (event) => {
      if (ended || event.target !== source) return;
      statusLine.textContent = event.target.readyState === EventSource.CLOSED
        ? "Disconnected: reload the page (the link needs its token)."
        : "Connection lost: reconnecting…";
    });
  };

  // A page that is navigated away from, or closed, lets go of its claims at once; one restored
  // from the back/forward cache connects again.
  addEventListener("pagehide", () => {
    if (source) { source.close(); source = null; }
    // The goodbye ends this page's holds too.
    for (const card of cards.values()) {
      if (card.held) {
        card.held = false;
        card.holdButton.disabled = false;
        card.holdButton.textContent = "Take time";
      }
    }
    navigator.sendBeacon(withToken(path("clients", client, "bye")));
  });
  addEventListener("pageshow", (event) => { if (event.persisted && !ended) connect(); });

  if (!token) {
    statusLine.textContent = "This link has no token: open the URL ask-user printed.";
    return;
  }
  connect();
})();
