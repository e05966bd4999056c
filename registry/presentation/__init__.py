"""What readers see, written one way for the pages, the reports and the exports: charts (charts, charts_decision,
charts_series, in the house style of chart_style), words (labels of metrics, sections, fields and units; changes
and ranges) and sentences (a comparison's ratios and withdrawals). Numbers are written by protocol.numbers.

Pure presentation: reads nothing from the database and imports no services, tasks, web or api.
"""
