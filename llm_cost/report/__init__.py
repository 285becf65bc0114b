"""Reports: result rows for the commands, the series' cost table, figure series, rendering, figures.

Rows are flat dicts with SI values and the unit in each key. `model_rows`, `speculative_rows`,
`serving_rows` build them; `cost_table` gathers the series' table (`cost_table_view` turns it around); `series` computes the curves
the figures draw and `figures` draws them (matplotlib); `render` prints rows as a Rich table,
JSON, CSV or Markdown.
"""
