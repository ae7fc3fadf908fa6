// A connector's admin form: show the settings of the chosen kind only. The server lists which inputs
// each kind uses (#connector-fields-by-kind, from each kind's settings: connectors.kinds); a section none
// of whose inputs the kind uses is hidden, and so is an actions table made for another kind (fieldset
// "for-<kind>").
(function () {
  "use strict";

  function start() {
    var kindSelect = document.getElementById("id_kind");
    var data = document.getElementById("connector-fields-by-kind");
    if (!kindSelect || !data) {
      return;
    }
    var byKind = JSON.parse(data.textContent);
    var governed = {};
    Object.keys(byKind).forEach(function (kind) {
      byKind[kind].forEach(function (name) {
        governed[name] = true;
      });
    });

    function rowField(row) {
      var match = /(?:^|\s)field-(\S+)/.exec(row.className);
      return match ? match[1] : "";
    }

    function show() {
      var used = {};
      (byKind[kindSelect.value] || []).forEach(function (name) {
        used[name] = true;
      });
      document.querySelectorAll("fieldset.module.aligned").forEach(function (fieldset) {
        var rows = fieldset.querySelectorAll(".form-row");
        var visible = 0;
        var governedRows = 0;
        rows.forEach(function (row) {
          var name = rowField(row);
          if (!governed[name]) {
            visible += 1;
            return;
          }
          governedRows += 1;
          row.hidden = !used[name];
          if (!row.hidden) {
            visible += 1;
          }
        });
        if (governedRows > 0) {
          fieldset.hidden = visible === 0;
        }
      });
      var actions = document.getElementById("actions-group");
      var table = actions ? actions.querySelector("fieldset") : null;
      if (table) {
        actions.hidden = !table.classList.contains("for-" + kindSelect.value);
      }
    }

    kindSelect.addEventListener("change", show);
    show();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
