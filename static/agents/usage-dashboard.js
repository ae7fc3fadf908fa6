// The usage dashboard's charts (admin page templates/admin/usage_dashboard.html), drawn with the
// vendored Chart.js (static/vendor/chartjs/) from the figures the page carries in
// <script type="application/json" id="usage-dashboard-data">.
// Chart.js API: https://www.chartjs.org/docs/latest/getting-started/usage.html
(function () {
  "use strict";

  const COLOURS = ["#417690", "#e0a526", "#5b9e4d", "#b5483c", "#7b5ea7", "#2f8f9d", "#9c6b30"];

  function readData() {
    const node = document.getElementById("usage-dashboard-data");
    return node ? JSON.parse(node.textContent) : null;
  }

  function uniq(values) {
    return Array.from(new Set(values));
  }

  // Sum a field over rows by key (rows come one per key and currency).
  function sumBy(rows, keyOf, field) {
    const sums = new Map();
    rows.forEach(function (row) {
      const key = keyOf(row);
      sums.set(key, (sums.get(key) || 0) + Number(row[field] || 0));
    });
    return sums;
  }

  function chart(id, config) {
    const canvas = document.getElementById(id);
    if (!canvas) {
      return null;
    }
    config.options = Object.assign({ responsive: true, maintainAspectRatio: false, animation: false }, config.options);
    return new window.Chart(canvas, config);
  }

  function tokensChart(data, labels) {
    const buckets = uniq(data.over_time.map(function (r) { return r.bucket; }));
    const prompt = sumBy(data.over_time, function (r) { return r.bucket; }, "prompt_tokens");
    const completion = sumBy(data.over_time, function (r) { return r.bucket; }, "completion_tokens");
    return chart("usage-chart-tokens", {
      type: "bar",
      data: {
        labels: buckets,
        datasets: [
          { label: labels.prompt_tokens, data: buckets.map(function (b) { return prompt.get(b); }), backgroundColor: COLOURS[0] },
          { label: labels.completion_tokens, data: buckets.map(function (b) { return completion.get(b); }), backgroundColor: COLOURS[1] },
        ],
      },
      options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } } },
    });
  }

  function costChart(data, labels) {
    const priced = data.over_time.filter(function (r) { return r.cost !== null; });
    const buckets = uniq(data.over_time.map(function (r) { return r.bucket; }));
    const currencies = uniq(priced.map(function (r) { return r.currency; }));
    const datasets = currencies.map(function (currency, i) {
      const sums = sumBy(priced.filter(function (r) { return r.currency === currency; }), function (r) { return r.bucket; }, "cost");
      return {
        label: labels.cost + " (" + currency + ")",
        data: buckets.map(function (b) { return sums.has(b) ? sums.get(b) : 0; }),
        borderColor: COLOURS[(i + 2) % COLOURS.length],
        backgroundColor: COLOURS[(i + 2) % COLOURS.length],
      };
    });
    return chart("usage-chart-cost", {
      type: "line",
      data: { labels: buckets, datasets: datasets },
      options: { scales: { y: { beginAtZero: true } } },
    });
  }

  function endpointsChart(data, labels) {
    const names = uniq(data.by_model_endpoint.map(function (r) { return r.label; }));
    const totals = sumBy(data.by_model_endpoint, function (r) { return r.label; }, "total_tokens");
    return chart("usage-chart-endpoints", {
      type: "bar",
      data: {
        labels: names,
        datasets: [{ label: labels.total_tokens, data: names.map(function (n) { return totals.get(n); }), backgroundColor: COLOURS[4] }],
      },
      options: { indexAxis: "y", scales: { x: { beginAtZero: true } } },
    });
  }

  function budgetsChart(data, labels) {
    const budgets = data.budgets.filter(function (b) { return b.percent !== null; });
    return chart("usage-chart-budgets", {
      type: "bar",
      data: {
        labels: budgets.map(function (b) { return b.name; }),
        datasets: [{
          label: labels.used_percent,
          data: budgets.map(function (b) { return b.percent; }),
          backgroundColor: budgets.map(function (b) { return b.percent >= 100 ? COLOURS[3] : COLOURS[2]; }),
        }],
      },
      options: { indexAxis: "y", scales: { x: { beginAtZero: true, suggestedMax: 100 } } },
    });
  }

  function draw() {
    const data = readData();
    if (!data || !window.Chart) {
      return;
    }
    const labels = data.labels;
    const charts = [tokensChart(data, labels), costChart(data, labels), endpointsChart(data, labels), budgetsChart(data, labels)];
    document.getElementById("usage-dashboard").dataset.chartsDrawn = String(charts.filter(Boolean).length);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
