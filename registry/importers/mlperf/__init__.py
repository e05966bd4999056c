"""The MLPerf importer: published MLPerf Inference and Training trees as benchreg protocol documents.

Plain Python (no Django). `parse_tree` reads an Inference tree and `training.parse_tree` a Training one; both
return an `ImportPlan` whose `ImportItem.document`s the caller submits through the normal validation and storage
path. `report_dict` and `render_report` give the per-file report. Inside, one module per concern:

* `rules`: MLPerf's own rules: per round from the rule tables in `rounds/` (MLCommons' submission checker
  constants, extracted by scripts/mlperf-rules), plus the tables that do not change (scenarios, formats,
  vocabularies); `accuracy`: the checker's accuracy verdict on accuracy.txt;
* `plan`, `ledger`, `tree`: what an import produces, the per-item file ledger and the safe tree walk, shared
  by both importers; `rounds_found`: the rounds a folder holds (an Inference and a Training round side by side
  are imported one at a time);
* `logs`: the readers of MLPerf's files; `systems`: the system description's sections;
* `documents`: one Inference result as a document; `inference` and `training`: the two entry points;
* `training_rules`: MLPerf Training's rules per round, read from rounds/training/*.json; `training_logs`:
  a training run's time, evaluations and verdict, and scaling.json;
* `report`: the per-file report;
* `published` and `referee`: MLCommons' published results table (summary_results.json) read, and compared with
  every document before anything is stored.
"""

from . import training
from .inference import parse_tree
from .plan import FileReport, ImportItem, ImportPlan, SourceError
from .report import render_report, report_dict
from .rounds_found import RoundFolder, round_folders
from .rules import PERCENTILES, SCENARIOS, UNSPECIFIED

__all__ = [
    "PERCENTILES",
    "SCENARIOS",
    "UNSPECIFIED",
    "FileReport",
    "ImportItem",
    "ImportPlan",
    "RoundFolder",
    "SourceError",
    "parse_tree",
    "render_report",
    "report_dict",
    "round_folders",
    "training",
]
