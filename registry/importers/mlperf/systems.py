"""The system description (systems/<id>.json) as the document's system and software sections, and its
publication facets (division, category, availability): typed where the protocol has a field, text otherwise.
A value the importer cannot read is kept verbatim and flagged on the `Build`, never guessed.
"""

from __future__ import annotations

import re
from typing import Any

from .. import units
from .plan import Build, SourceError
from .rules import AVAILABILITIES, CATEGORIES, DIVISIONS, UNSPECIFIED


def _text(value: Any) -> str | None:
    return None if units.not_stated(value) else str(value).strip()


def publication_facets(system: dict[str, Any], build: Build) -> dict[str, str | None]:
    """division, category and availability from the system description, in MLPerf's closed vocabularies.

    Case and spacing are normalised ('Available', 'datacenter, edge'); a value outside the vocabulary is kept
    verbatim and flagged, never mapped to the nearest word."""
    out: dict[str, str | None] = {}
    for name, key, table in (
        ("division", "division", DIVISIONS),
        ("category", "system_type", CATEGORIES),
        ("availability", "status", AVAILABILITIES),
    ):
        out[name] = _facet(system, key, table, build)
    return out


def _facet(system: dict[str, Any], key: str, table: dict[str, str], build: Build) -> str | None:
    raw = _text(system.get(key))
    if raw is None:
        return None
    words = [w.strip().lower() for w in raw.split(",")]
    known = [table.get(w) for w in words]
    if all(known):
        return ",".join(sorted(set(known), key=list(table.values()).index))  # type: ignore[arg-type]
    build.warnings.append(
        f"system.{key} = {raw!r} is not one of {', '.join(sorted(set(table.values())))}: kept as written"
    )
    return raw


CONSUMED = frozenset(
    {
        "system_name",
        "number_of_nodes",
        "accelerators_per_node",
        "accelerator_model_name",
        "accelerator_memory_capacity",
        "accelerator_memory_configuration",
        "accelerator_host_interconnect",
        "accelerator_interconnect",
        "accelerator_frequency",
        "host_processor_model_name",
        "host_processors_per_node",
        "host_memory_capacity",
        "host_processor_frequency",
        "host_processor_core_count",
        "host_processor_vcpu_count",
        "cooling",
        "operating_system",
        "framework",
        "other_software_stack",
        "sw_notes",
        "division",
        "submitter",
        "status",
        "system_type",
    }
)


VENDORS = {"amd": "AMD", "nvidia": "NVIDIA", "intel": "Intel", "google": "Google", "qualcomm": "Qualcomm"}


COOLING = {
    "air": "air",
    "air-cooled": "air",
    "air cooled": "air",
    "liquid": "liquid",
    "liquid-cooled": "liquid",
    "liquid cooled": "liquid",
    "immersion": "immersion",
}


RUNTIMES = frozenset({"rocm", "cuda", "cudnn", "hip", "oneapi"})


ALIASES = {"pytorch": "torch"}


def system_section(system: dict[str, Any], build: Build) -> dict[str, Any]:
    name, nodes = _text(system.get("system_name")), units.parse_count(system.get("number_of_nodes"))
    raw_nodes = system.get("number_of_nodes")
    if name and not nodes and not units.not_stated(raw_nodes):
        # 1.0 is one node (parse_count reads a whole float); 1.5 or 0 is no number of nodes
        raise SourceError(f"number_of_nodes is {raw_nodes!r}: not a whole number of nodes above zero", where="system")
    if not name or not nodes:
        raise SourceError("system_name and a positive number_of_nodes are required", where="system")
    out: dict[str, Any] = {
        "name": name,
        "nodes": nodes,
        "accelerators": _accelerators(system, nodes, build),
        "host": _host(system, build),
        "cooling": _cooling(system, build),
    }
    notes = {
        key: str(value)[:2000]
        for key, value in sorted(system.items())
        if key not in CONSUMED and not units.not_stated(value)
    }
    notes.update(build.system_notes)
    if notes:
        out["notes"] = notes
    return out


def _quantity(system: dict[str, Any], key: str, parser: Any, build: Build) -> float | int | None:
    raw = system.get(key)
    if units.not_stated(raw):
        return None
    value = parser(str(raw))
    if value is None:
        build.flag(f"system.{key}", str(raw), "not '<number> <unit>' with a unit of the importer's table")
    elif _si_unit(str(raw)):
        # As written: 'GB' is 10^9 bytes. Said beside the system and in the report, because vendors also write GB
        # for binary capacities (JEDEC usage); the registry does not guess which one a submitter meant.
        build.system_notes["import.memory_units"] = (
            "memory capacities in MB/GB/TB are read as written, in SI units (10^6/10^9/10^12 bytes), and stored in "
            "GiB (2^30 bytes)"
        )
        build.warnings.append(
            f"system.{key} = {raw!r} read as {value} GiB: {_si_unit(str(raw))} as written (SI, "
            f"10^{_SI_POWER[_si_unit(str(raw)).lower()]} bytes), not the binary {_si_unit(str(raw))[0]}iB"
        )
    return value  # type: ignore[no-any-return]


_SI_POWER = {"mb": 6, "gb": 9, "tb": 12}


def _si_unit(raw: str) -> str:
    """The SI memory unit a capacity is written in ('GB' of '192 GB'), '' for a binary unit or another text."""
    match = re.search(r"\d\s*([MGT]B)\s*$", raw, re.IGNORECASE)
    return match[1] if match else ""


def _accelerators(system: dict[str, Any], nodes: int, build: Build) -> list[dict[str, Any]]:
    per_node = units.parse_count(system.get("accelerators_per_node"))
    model = _text(system.get("accelerator_model_name"))
    if per_node is None and not units.not_stated(system.get("accelerators_per_node")):
        build.flag("system.accelerators_per_node", str(system["accelerators_per_node"]), "not a count")
    if not per_node or model is None:
        return []
    accelerator = {
        "vendor": _vendor(model, build),
        "model": model,
        "count": per_node * nodes,
        "memory_gib": _quantity(system, "accelerator_memory_capacity", units.parse_memory_gib, build),
        "memory_type": _text(system.get("accelerator_memory_configuration")),
        "host_interconnect": _text(system.get("accelerator_host_interconnect")),
        "interconnect": _text(system.get("accelerator_interconnect")),
        "frequency_mhz": _quantity(system, "accelerator_frequency", units.parse_frequency_mhz, build),
    }
    return [{k: v for k, v in accelerator.items() if v is not None}]


def _vendor(model: str, build: Build) -> str:
    vendor = VENDORS.get(model.split()[0].lower())
    if vendor:
        build.system_notes["import.accelerator_vendor"] = (
            f"{vendor!r} read from the first word of accelerator_model_name"
        )
        return vendor
    build.flag("system.accelerator_model_name", model, "no known vendor name at its start")
    return UNSPECIFIED


def _host(system: dict[str, Any], build: Build) -> dict[str, Any] | None:
    host = {
        "cpu_model": _text(system.get("host_processor_model_name")),
        "sockets": units.parse_count(system.get("host_processors_per_node")),
        "memory_gib": _quantity(system, "host_memory_capacity", units.parse_memory_gib, build),
        "frequency_mhz": _quantity(system, "host_processor_frequency", units.parse_frequency_mhz, build),
    }
    # Submitters fill these per processor or per node (both occur in published rounds): host.cores and
    # host.threads are per node, so the value is kept as text rather than multiplied on a guess.
    for key in ("host_processor_core_count", "host_processor_vcpu_count"):
        if not units.not_stated(system.get(key)):
            build.flag(f"system.{key}", str(system[key]), "per processor or per node is not stated")
    return {k: v for k, v in host.items() if v is not None} or None


def _cooling(system: dict[str, Any], build: Build) -> str | None:
    raw = system.get("cooling")
    if units.not_stated(raw):
        return None
    cooling = COOLING.get(str(raw).strip().lower())
    if cooling is None:
        build.flag("system.cooling", str(raw), "not air, liquid or immersion")
    return cooling


def software_section(
    system: dict[str, Any], measurements: dict[str, Any], settings: dict[str, Any], build: Build
) -> dict[str, Any]:
    out: dict[str, Any] = {"os": _os(system, build)}
    stack = _versions(system, "framework", build)
    runtimes = {k: v for k, v in stack.items() if k in RUNTIMES}
    frameworks = {k: v for k, v in stack.items() if k not in RUNTIMES}
    packages = _versions(system, "other_software_stack", build)
    for name, value in (
        ("runtimes", runtimes),
        ("frameworks", frameworks),
        ("packages", packages),
        ("settings", settings),
    ):
        if value:
            out[name] = value
    _note_software(system, measurements, build)
    if build.software_notes:
        out["notes"] = dict(build.software_notes)
    return out


def _note_software(system: dict[str, Any], measurements: dict[str, Any], build: Build) -> None:
    """What the measurements and sw_notes say beyond the typed fields, kept as notes (2000 characters each)."""
    for key, value in sorted(measurements.items()):
        if key not in ("weight_data_types", "input_data_types") and not units.not_stated(value):
            build.software_notes[f"measurements.{key}"] = str(value)[:2000]
    if not units.not_stated(system.get("sw_notes")):
        build.software_notes["sw_notes"] = str(system["sw_notes"])[:2000]


def _os(system: dict[str, Any], build: Build) -> dict[str, str] | None:
    raw = _text(system.get("operating_system"))
    if raw is None:
        return None
    parsed = units.parse_os(raw)
    if parsed is None:
        build.flag("system.operating_system", raw, "not '<name> <version>'")
        return None
    if parsed[2]:  # a qualifier such as "LTS": the full text is kept beside the typed name and version
        build.software_notes["operating_system"] = raw
    return {"name": parsed[0], "version": parsed[1]}


def _versions(system: dict[str, Any], key: str, build: Build) -> dict[str, str]:
    raw = _text(system.get(key))
    if raw is None:
        return {}
    pairs, leftovers = units.split_versions(raw)
    found: dict[str, str] = {}
    for name, version in pairs:
        canonical = ALIASES.get(name.lower(), name.lower())
        if canonical in found:
            leftovers.append(f"{name} {version}")
        else:
            found[canonical] = version
    if leftovers:
        build.flag(f"system.{key}", raw, f"parts not read as '<name> <version>': {'; '.join(leftovers)}")
    return found
