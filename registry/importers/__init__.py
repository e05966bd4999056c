"""Importers of published benchmark evidence (plain Python, no Django): each turns a source tree into
protocol documents plus a per-file report; the caller stores the documents through the normal path."""
