/* Endpoint presets on a model endpoint's admin page: choosing a provider (or a model family) fills the
   base URL pattern, the abilities, the limits, the API version and the headers from the presets the page
   carries as JSON (#model-presets-data). Everything stays editable; nothing is sent anywhere. */
(function () {
  "use strict";

  function byId(id) { return document.getElementById(id); }

  function setValue(id, value) {
    var input = byId(id);
    if (!input) { return; }
    input.value = value === null || value === undefined ? "" : String(value);
    input.dispatchEvent(new Event("change", { bubbles: true }));
  }

  function setAbility(key, value) {
    var input = byId("id_" + key);
    if (!input) { return; }
    if (input.type === "checkbox") {
      input.checked = Boolean(value);
    } else {  // reasoning_replay: Django's NullBooleanSelect
      input.value = value === null || value === undefined ? "unknown" : (value ? "true" : "false");
    }
  }

  function init() {
    var data = byId("model-presets-data");
    var provider = byId("id_provider");
    var family = byId("id_model_family");
    if (!data || !provider) { return; }
    var presets = JSON.parse(data.textContent);
    var help = byId("model-preset-help");

    function presetOf(name) {
      for (var i = 0; i < presets.length; i += 1) {
        if (presets[i].provider === name) { return presets[i]; }
      }
      return null;
    }

    function showHelp(preset) {
      if (!help) { return; }
      help.textContent = "";
      if (!preset) { help.hidden = true; return; }
      var key = document.createElement("p");
      key.textContent = help.dataset.keyLabel + " " + preset.key_help;
      help.appendChild(key);
      var holes = preset.base_url.match(/\{[a-z_]+\}/g);
      if (holes) {
        var hint = document.createElement("p");
        hint.textContent = help.dataset.placeholderLabel + " " + holes.join(", ");
        help.appendChild(hint);
      }
      var source = document.createElement("p");
      source.appendChild(document.createTextNode(help.dataset.sourceLabel + " "));
      var link = document.createElement("a");
      link.href = preset.source;
      link.rel = "noreferrer noopener";
      link.target = "_blank";
      link.textContent = preset.source;
      source.appendChild(link);
      help.appendChild(source);
      help.hidden = false;
    }

    function offerFamilies(name) {
      if (!family) { return; }
      var groups = family.querySelectorAll("optgroup");
      var label = presetOf(name) ? presetOf(name).label : null;
      groups.forEach(function (group) {
        var mine = group.label === label;
        group.hidden = !mine;
        group.disabled = !mine;
      });
      if (family.selectedOptions.length && family.selectedOptions[0].parentNode.disabled) {
        family.value = "";
      }
    }

    function applyAbilities(abilities) {
      Object.keys(abilities).forEach(function (key) { setAbility(key, abilities[key]); });
    }

    function findIn(families, key) {
      var chosen = null;
      (families || []).forEach(function (f) { if (f.key === key) { chosen = f; } });
      return chosen;
    }

    function setRole(role) {
      var input = byId("id_role");
      if (input) { setValue("id_role", role); }
    }

    // key: a chat family's, or "embedding/<key>" or "rerank/<key>" (which also set the endpoint's role).
    function applyFamily(preset, key) {
      var slash = key.indexOf("/");
      var kind = slash > 0 ? key.slice(0, slash) : "chat";
      var name = slash > 0 ? key.slice(slash + 1) : key;
      var lists = { chat: preset.families, embedding: preset.embedding_families, rerank: preset.rerank_families };
      var chosen = findIn(lists[kind], name);
      if (!chosen) { return; }
      if (chosen.model) { setValue("id_model", chosen.model); }
      if (kind === "chat") {
        setValue("id_context_window", chosen.context_window);
        setValue("id_max_output_tokens", chosen.max_output_tokens);
        applyAbilities(chosen.abilities);
        var role = byId("id_role");
        if (role && (role.value === "embedding" || role.value === "rerank")) { setRole("general"); }
      } else {
        setRole(kind);
        if (kind === "rerank" && chosen.base_url) { setValue("id_base_url", chosen.base_url); }
      }
      if (family) { family.value = preset.provider + ":" + key; }
    }

    function applyProvider(preset) {
      setValue("id_base_url", preset.base_url);
      setValue("id_api_version", preset.api_version);
      applyAbilities(preset.abilities);
      var headers = byId("id_extra_headers_input");
      if (headers && !headers.value.trim() && Object.keys(preset.headers).length) {
        headers.value = JSON.stringify(preset.headers, null, 2);
      }
      if (preset.families.length) { applyFamily(preset, preset.families[0].key); }
    }

    provider.addEventListener("change", function () {
      var preset = presetOf(provider.value);
      offerFamilies(provider.value);
      showHelp(preset);
      if (preset) { applyProvider(preset); }
    });

    if (family) {
      family.addEventListener("change", function () {
        var at = family.value.indexOf(":");
        var parts = [family.value.slice(0, at), family.value.slice(at + 1)];
        var preset = presetOf(parts[0]);
        if (!preset) { return; }
        if (provider.value !== preset.provider) {
          provider.value = preset.provider;
          offerFamilies(preset.provider);
          showHelp(preset);
          setValue("id_base_url", preset.base_url);
          setValue("id_api_version", preset.api_version);
        }
        applyFamily(preset, parts[1]);
      });
    }

    offerFamilies(provider.value);
    showHelp(presetOf(provider.value));
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
