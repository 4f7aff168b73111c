"""The viewer's stylesheet and script, inlined into every page it writes (no
server, no network). The script reads the JSON in `#ka-attention-data`:
`{"layers": [L names], "heads": [N names], "target": [T labels],
"source": [S labels], "attention": L x N x T x S numbers}` ("target" and
"source" are the rows and the columns, whatever they are: `"axes"` names
them for the page's reader).

Page contract (the browser test relies on it): `#ka-layer` and `#ka-head`
are the selects (head value `"avg"` is the mean over heads); `#ka-numbers`
shows the weights as numbers; tokens are `.token[data-role][data-index]`
in `#ka-target` and `#ka-source`; hovering one sets `data-weight` (and the
shading) on the tokens of the other side; `#ka-matrix td` cells carry the
selected matrix in `data-weight`; `body[data-layer][data-head]` is the
current choice.
"""

CSS = """
body { font-family: system-ui, sans-serif; margin: 12px; color: #222; }
h1 { font-size: 16px; margin: 0 0 8px; }
.controls { display: flex; gap: 16px; align-items: center; margin-bottom: 8px;
  font-size: 13px; }
.row { display: flex; align-items: flex-start; margin: 4px 0; }
.role { min-width: 56px; flex: none; font-size: 12px; color: #666;
  padding: 4px 6px 0 0; }
.tokens { display: flex; flex-wrap: wrap; gap: 3px; }
.token { display: inline-flex; flex-direction: column; align-items: center;
  padding: 2px 4px; border: 1px solid #ccc; border-radius: 3px;
  cursor: default; font-size: 13px; background-color: rgba(0, 0, 0, 0); }
.token.active { border-color: #d62728; box-shadow: 0 0 0 1px #d62728; }
.token .weight, #ka-matrix .weight { display: none; font-size: 10px;
  color: #333; }
body.show-numbers .token .weight, body.show-numbers #ka-matrix .weight {
  display: inline; }
.hint { font-size: 12px; color: #666; margin: 6px 0; }
#ka-matrix { border-collapse: collapse; font-size: 11px; margin-top: 8px; }
#ka-matrix th { font-weight: normal; padding: 1px 3px; white-space: nowrap; }
#ka-matrix thead th { writing-mode: vertical-rl; transform: rotate(180deg);
  text-align: left; }
#ka-matrix td { min-width: 16px; height: 16px; text-align: center;
  border: 1px solid #eee; }
"""

SCRIPT = r"""
(function () {
  "use strict";
  var data = JSON.parse(
    document.getElementById("ka-attention-data").textContent);
  var layerSelect = document.getElementById("ka-layer");
  var headSelect = document.getElementById("ka-head");
  var numbers = document.getElementById("ka-numbers");
  var matrix = null;  // the selected (T, S) weights
  var scale = 1;      // its largest weight: full shading

  function option(select, value, text) {
    var element = document.createElement("option");
    element.value = value;
    element.textContent = text;
    select.appendChild(element);
  }
  data.layers.forEach(function (name, index) {
    option(layerSelect, String(index), name);
  });
  data.heads.forEach(function (name, index) {
    option(headSelect, String(index), name);
  });
  if (data.heads.length > 1) { option(headSelect, "avg", "average"); }

  function selected() {
    var heads = data.attention[Number(layerSelect.value)];
    if (headSelect.value !== "avg") { return heads[Number(headSelect.value)]; }
    return heads[0].map(function (row, t) {
      return row.map(function (_, s) {
        var total = 0;
        heads.forEach(function (head) { total += head[t][s]; });
        return total / heads.length;
      });
    });
  }

  function shade(element, weight) {
    var alpha = scale > 0 ? Math.max(0, weight) / scale : 0;
    element.style.backgroundColor =
      "rgba(33, 102, 172, " + alpha.toFixed(3) + ")";
    element.style.color = alpha > 0.6 ? "#fff" : "";
  }

  function tokens(role) {
    return Array.prototype.slice.call(document.querySelectorAll(
      "#ka-" + role + " .token"));
  }

  function clear() {
    ["target", "source"].forEach(function (role) {
      tokens(role).forEach(function (element) {
        element.classList.remove("active");
        element.removeAttribute("data-weight");
        element.style.backgroundColor = "";
        element.style.color = "";
        element.querySelector(".weight").textContent = "";
      });
    });
  }

  function highlight(role, index) {
    clear();
    var other = role === "target" ? "source" : "target";
    tokens(role)[index].classList.add("active");
    tokens(other).forEach(function (element, position) {
      var weight = role === "target" ? matrix[index][position]
                                     : matrix[position][index];
      element.setAttribute("data-weight", String(weight));
      element.querySelector(".weight").textContent = weight.toFixed(2);
      shade(element, weight);
    });
  }

  function buildTokens(role, labels) {
    var box = document.getElementById("ka-" + role);
    labels.forEach(function (label, index) {
      var token = document.createElement("span");
      token.className = "token";
      token.setAttribute("data-role", role);
      token.setAttribute("data-index", String(index));
      var text = document.createElement("span");
      text.className = "text";
      text.textContent = label;
      var weight = document.createElement("span");
      weight.className = "weight";
      token.appendChild(text);
      token.appendChild(weight);
      token.addEventListener("mouseenter", function () {
        highlight(role, index);
      });
      token.addEventListener("mouseleave", clear);
      box.appendChild(token);
    });
  }

  function buildMatrix() {
    var table = document.getElementById("ka-matrix");
    table.textContent = "";
    var head = table.createTHead().insertRow();
    head.appendChild(document.createElement("th"));
    data.source.forEach(function (label) {
      var cell = document.createElement("th");
      cell.textContent = label;
      head.appendChild(cell);
    });
    var body = table.createTBody();
    matrix.forEach(function (row, t) {
      var line = body.insertRow();
      var name = document.createElement("th");
      name.textContent = data.target[t];
      line.appendChild(name);
      row.forEach(function (weight, s) {
        var cell = line.insertCell();
        cell.setAttribute("data-weight", String(weight));
        cell.title = data.target[t] + " \u2192 " + data.source[s] + ": " +
          weight.toFixed(4);
        var text = document.createElement("span");
        text.className = "weight";
        text.textContent = weight.toFixed(2);
        cell.appendChild(text);
        shade(cell, weight);
      });
    });
  }

  function update() {
    matrix = selected();
    scale = 0;
    matrix.forEach(function (row) {
      row.forEach(function (weight) { scale = Math.max(scale, weight); });
    });
    document.body.setAttribute("data-layer", layerSelect.value);
    document.body.setAttribute("data-head", headSelect.value);
    clear();
    buildMatrix();
  }

  buildTokens("target", data.target);
  buildTokens("source", data.source);
  layerSelect.addEventListener("change", update);
  headSelect.addEventListener("change", update);
  numbers.addEventListener("change", function () {
    document.body.classList.toggle("show-numbers", numbers.checked);
  });
  update();
})();
"""
