// The fleet dashboard: draws each seat's bench chart with the vendored Chart.js (the
// page's JSON data block #bench-data: decode tok/s over time, its baseline, and the 30%
// and 50% below it lines), then reloads the page every data-refresh seconds.
"use strict";
(function () {
  function line(label, values, color, dash) {
    return {
      label: label,
      data: values,
      borderColor: color,
      backgroundColor: color,
      borderDash: dash || [],
      pointRadius: dash ? 0 : 3,
      borderWidth: 2,
      fill: false,
    };
  }
  function flat(value, n) {
    var out = [];
    for (var i = 0; i < n; i++) out.push(value);
    return out;
  }
  function draw(canvas, series) {
    var n = series.decode.length;
    var sets = [line("decode tok/s", series.decode, "#1f6feb")];
    if (series.baseline) {
      sets.push(line("baseline", flat(series.baseline, n), "#2da44e", [6, 3]));
      sets.push(line("warning (-30%)", flat(series.warning, n), "#d29922", [4, 4]));
      sets.push(line("critical (-50%)", flat(series.critical, n), "#cf222e", [2, 4]));
    }
    var chart = new Chart(canvas, {
      type: "line",
      data: { labels: series.dates.map(function (d) { return d.replace("T", " "); }), datasets: sets },
      options: {
        animation: false,
        responsive: false,
        plugins: { legend: { position: "bottom" } },
        scales: { y: { beginAtZero: true, title: { display: true, text: "tok/s" } } },
      },
    });
    canvas.setAttribute("data-drawn", String(chart.data.datasets[0].data.length));
    canvas.setAttribute("data-lines", String(chart.data.datasets.length));
  }
  var block = document.getElementById("bench-data");
  var all = block ? JSON.parse(block.textContent) : [];
  var charts = document.querySelectorAll("canvas.bench-chart");
  for (var i = 0; i < charts.length; i++) {
    var seat = charts[i].getAttribute("data-seat");
    for (var j = 0; j < all.length; j++) {
      if (all[j].seat === seat && typeof Chart !== "undefined") draw(charts[i], all[j]);
    }
  }
  var refresh = parseInt(document.body.getAttribute("data-refresh"), 10);
  if (refresh > 0) setTimeout(function () { location.reload(); }, refresh * 1000);
})();
