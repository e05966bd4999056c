"""Forms of the browsing pages. They validate input only; pages call selectors and services with the result."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from django import forms

from protocol import comparability, serving, sizing
from protocol import decisions as dec
from protocol.decisions import training
from protocol.sizing import MAX_PRICE_PER_HOUR
from registry.choices import Scope
from registry.models import Agent
from registry.models.fields import MAX_ROW_ID
from registry.selectors.catalogue import FACETS, SORTS, CatalogueQuery

KEY_PATTERN = r"^sha256:[0-9a-f]{64}$"
AXIS_HELP = {
    "system": "Which system is better for this workload? Everything else must match.",
    "software": "Which software stack is better on the same hardware?",
    "precision": "What does a lower precision buy on the same system, and at what quality?",
    "iso-quality": "Which system, software and precision serve this workload better at the same quality target?",
    "scaling": "How does one configuration scale as accelerators and nodes are added? All but the size must match.",
}


class CatalogueForm(forms.Form):
    """The catalogue's GET parameters. Unknown or malformed values are dropped, never an error page."""

    q = forms.CharField(required=False, max_length=200, label="Search")
    set = forms.RegexField(KEY_PATTERN, required=False)
    sort = forms.ChoiceField(choices=[(k, v[0]) for k, v in SORTS.items()], required=False)
    page = forms.IntegerField(required=False, min_value=1, max_value=100_000)
    withdrawn = forms.BooleanField(required=False, label="Include withdrawn runs")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, (_, label) in FACETS.items():
            self.fields[name] = forms.CharField(required=False, max_length=500, label=label)

    def to_query(self) -> CatalogueQuery:
        self.is_valid()
        data = self.cleaned_data  # fields that failed validation are simply absent
        filters = {name: data[name].strip() for name in FACETS if data.get(name, "").strip()}
        return CatalogueQuery(
            filters=filters,
            q=data.get("q", "") or "",
            set_key=data.get("set", "") or "",
            sort=data.get("sort") or "newest",
            page=data.get("page") or 1,
            include_withdrawn=bool(data.get("withdrawn")),
        )


def parse_run_ids(values: list[str]) -> list[int]:
    """Run ids from checkboxes and/or a typed list ("12, 15 19"), in order, without repeats."""
    ids: list[int] = []
    for value in values:
        for token in re.split(r"[\s,;]+", value.strip()):
            if token.isascii() and token.isdigit() and int(token) not in ids:
                ids.append(int(token))
    return ids


class CompareForm(forms.Form):
    """Runs (checked in the catalogue or typed as ids) and the axis of the comparison."""

    runs = forms.CharField(
        required=False,
        max_length=2000,
        label="Run ids",
        help_text="Two or more run numbers, separated by commas or spaces.",
    )
    axis = forms.ChoiceField(
        label="What is being decided",
        initial="system",
        widget=forms.RadioSelect,
        choices=[(a, f"{a.capitalize()}: {AXIS_HELP.get(a, '')}") for a in comparability.contract().axes],
    )
    baseline = forms.IntegerField(
        required=False,
        min_value=1,
        label="Baseline run (optional)",
        help_text="The run whose configuration the others are stated against "
        "(“X delivers 1.2× the baseline's throughput”). Default: the first.",
    )

    def __init__(self, *args: Any, checked: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.checked = checked or []

    def clean(self) -> dict[str, Any]:
        data = cast(dict[str, Any], super().clean())  # Form.clean returns cleaned_data, never None
        ids = parse_run_ids([*self.checked, data.get("runs", "") or ""])
        if len(ids) < 2:
            raise forms.ValidationError("Choose two or more runs to compare.")
        if len(ids) > 50:
            raise forms.ValidationError("Compare at most 50 runs at once.")
        beyond = [i for i in ids if i > MAX_ROW_ID]
        if beyond:
            raise forms.ValidationError(f"There is no run {beyond[0]}.")
        data["run_ids"] = ids
        if data.get("baseline") is not None and data["baseline"] not in ids:
            self.add_error("baseline", f"The baseline must be one of the runs compared ({', '.join(map(str, ids))}).")
        return data


# Hourly prices, one convention on every form that takes them (a decision's question and a comparison's report):
# the decision's `prices.system_hour` (docs/decisions.md), keyed by configuration as the candidates are labelled.
PRICES_LABEL = "Hourly prices per configuration (optional)"
PRICES_HELP = (
    "One configuration per line: accelerators x accelerator model = price per system-hour, e.g. 8x H100 = 98.00; "
    "* = 50 prices any system without its own line. A price that matches no configuration is refused, naming the "
    "keys that would match."
)


def parse_hourly_prices(raw: str) -> dict[str, float]:
    """{'8x H100': 98.0, '*': 50.0} from the PRICES_HELP lines; ValidationError naming the first line that is not
    'key = price' with a price from 0 to MAX_PRICE_PER_HOUR. Which keys match a configuration is the service's to
    say (it knows the runs), with the keys that would."""
    prices: dict[str, float] = {}
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        name, sep, value = line.rpartition("=")
        try:
            price = float(value)
        except ValueError:
            price = -1.0
        if not sep or not name.strip() or not 0 <= price <= MAX_PRICE_PER_HOUR:  # NaN fails too
            raise forms.ValidationError(
                f"Line {number}: write 'configuration = price per system-hour', e.g. 8x H100 = 98.00 (or * = 50 "
                f"for any system), with a price from 0 to {MAX_PRICE_PER_HOUR:g}"
            )
        prices[" ".join(name.split())] = price
    return prices


class ReportRequestForm(forms.Form):
    """A decision report: its title, the decision it supports, and optional hourly prices per configuration."""

    title = forms.CharField(max_length=200, label="Report title")
    decision = forms.CharField(
        max_length=2000, label="Decision this report supports", widget=forms.Textarea(attrs={"rows": 3})
    )
    prices = forms.CharField(
        required=False,
        max_length=4000,
        label=PRICES_LABEL,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=PRICES_HELP,
    )

    def clean_prices(self) -> dict[str, float] | None:
        return parse_hourly_prices(self.cleaned_data.get("prices", "")) or None


class WithdrawForm(forms.Form):
    reason = forms.CharField(max_length=2000, label="Reason for withdrawal", widget=forms.Textarea(attrs={"rows": 2}))


class TokenCreateForm(forms.Form):
    """Offers only the scopes the user may put on a token (registry.policy.mintable_scopes)."""

    name = forms.CharField(max_length=100, label="Token name", help_text="Where it will be used, e.g. lab-h100-01")
    scopes = forms.MultipleChoiceField(choices=[], widget=forms.CheckboxSelectMultiple, label="Scopes")

    def __init__(self, *args: Any, mintable: Iterable[str] = ("read",), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        scopes = cast(forms.MultipleChoiceField, self.fields["scopes"])
        scopes.choices = [(v, label) for v, label in Scope.choices if v in set(mintable)]
        scopes.initial = ["submit"] if "submit" in set(mintable) else ["read"]


if TYPE_CHECKING:
    _ModelMultipleChoiceField = forms.ModelMultipleChoiceField[Any]
else:  # generic in django-stubs only: not subscriptable at run time (django_stubs_ext does not patch it in)
    _ModelMultipleChoiceField = forms.ModelMultipleChoiceField


class RowChoiceField(_ModelMultipleChoiceField):
    """ModelMultipleChoiceField whose values are row ids: one that is not a number or beyond any row's id is refused
    as an invalid choice before the database is asked (a 20-digit id overflows SQLite's driver)."""

    def _check_values(self, value: Any) -> Any:
        for each in value:
            text = str(each)
            if not (text.isascii() and text.isdigit()) or int(text) > MAX_ROW_ID:
                raise forms.ValidationError(
                    self.error_messages["invalid_choice"], code="invalid_choice", params={"value": text[:30]}
                )
        return super()._check_values(value)  # type: ignore[misc]  # private Django method django-stubs omits


class DecisionForm(forms.Form):
    title = forms.CharField(max_length=200)
    workload = forms.CharField(max_length=200, help_text="e.g. llama2-70b-99")
    scenario = forms.ChoiceField(choices=[("server", "server"), ("interactive", "interactive"), ("offline", "offline")])
    served_model = forms.CharField(
        required=False,
        max_length=500,
        label="Model served (served models: as the runs name it, e.g. amd/GLM-5.1-MXFP4)",
        help_text="Runs of another model are left out; required where the stored runs serve several models.",
    )
    request_shape = forms.CharField(
        required=False,
        max_length=10_000,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Request shape (served models: as the runs state it, JSON)",
        help_text=(
            "Runs of another shape are left out; required where the stored runs have several (the refusal lists "
            'them), e.g. {"kind": "fixed", "input_tokens": {"mean": 64, "stdev": 0, "distribution": "constant"}, '
            '"output_tokens": {"mean": 32, "stdev": 0, "distribution": "constant"}, "turns": "single"}'
        ),
    )
    # The ranges are protocol.decisions' plausible ranges (docs/decisions.md), stated on the page as min/max.
    ttft_p99_ms = forms.FloatField(
        required=False, min_value=0.001, max_value=sizing.MAX_LATENCY_MS, label="p99 TTFT at most (ms)"
    )
    tpot_p99_ms = forms.FloatField(
        required=False, min_value=0.001, max_value=sizing.MAX_LATENCY_MS, label="p99 TPOT at most (ms)"
    )
    quality_target_ratio = forms.FloatField(
        required=False, min_value=0.001, max_value=1.5, label="Quality target (ratio of the reference, e.g. 0.99)"
    )
    demand = forms.FloatField(min_value=0.001, max_value=dec.MAX_DEMAND, label="Demand at peak")
    sustained_demand = forms.FloatField(
        required=False,
        min_value=0.001,
        max_value=dec.MAX_DEMAND,
        label="Demand, sustained (average; empty: the peak)",
    )
    demand_unit = forms.ChoiceField(choices=[(u, u) for u in ("tokens/s", "samples/s", "requests/s", "queries/s")])
    headroom = forms.FloatField(
        required=False, min_value=0, max_value=dec.MAX_HEADROOM, label="Headroom (spare capacity, 0.2 = 20%)"
    )
    min_tokens_per_second_per_user = forms.FloatField(
        required=False,
        min_value=0.001,
        max_value=serving.MAX_PER_USER,
        label="Interactivity: output tokens/s per user at least (served models measured as a load sweep)",
    )
    redundancy = forms.IntegerField(
        required=False, min_value=0, max_value=dec.MAX_REDUNDANCY, label="Spare systems (the k of N+k)"
    )
    price_per_system_hour = forms.FloatField(
        required=False, min_value=0, max_value=dec.MAX_PRICE_PER_HOUR, label="Price per system-hour (any system)"
    )
    prices = forms.CharField(
        required=False,
        max_length=4000,
        label=PRICES_LABEL,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=PRICES_HELP,
    )
    energy_per_kwh = forms.FloatField(
        required=False, min_value=0, max_value=dec.MAX_ENERGY_PRICE_KWH, label="Energy price per kWh"
    )
    webhook_url = forms.URLField(required=False, max_length=500, assume_scheme="https", label="Webhook URL (optional)")

    def question(self) -> dict[str, Any]:
        d = self.cleaned_data
        objectives = [
            {"metric": m, "percentile": "p99", "max_ms": d[f]}
            for m, f in (("ttft_ms", "ttft_p99_ms"), ("tpot_ms", "tpot_p99_ms"))
            if d.get(f)
        ]
        prices: dict[str, Any] = {}
        hourly = dict(d.get("prices") or {})
        if d.get("price_per_system_hour") is not None:
            hourly.setdefault("*", d["price_per_system_hour"])
        if hourly:
            prices["system_hour"] = hourly
        if d.get("energy_per_kwh") is not None:
            prices["energy_per_kwh"] = d["energy_per_kwh"]
        return {
            "phase": "inference",
            "workload": d["workload"],
            "scenario": d["scenario"],
            **({"served_model": {"name": d["served_model"].strip()}} if (d.get("served_model") or "").strip() else {}),
            **({"request_shape": d["request_shape"]} if d.get("request_shape") else {}),
            "objectives": objectives,
            **({"headroom": d["headroom"]} if d.get("headroom") else {}),
            "quality": {"target_ratio": d["quality_target_ratio"]} if d.get("quality_target_ratio") else {},
            **({"redundancy": d["redundancy"]} if d.get("redundancy") else {}),
            **(
                {"interactivity": {"min_tokens_per_second_per_user": d["min_tokens_per_second_per_user"]}}
                if d.get("min_tokens_per_second_per_user")
                else {}
            ),
            "demand": self._demand(d),
            "prices": prices,
        }

    def clean_prices(self) -> dict[str, float]:
        return parse_hourly_prices(self.cleaned_data.get("prices", ""))

    def clean_request_shape(self) -> dict[str, Any] | None:
        """The shape as a JSON object (None when left empty); its fields are checked with the question."""
        text = (self.cleaned_data.get("request_shape") or "").strip()
        if not text:
            return None
        try:
            shape = json.loads(text, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            raise forms.ValidationError("The request shape is JSON: an object, as a run states it.") from None
        if not isinstance(shape, dict):
            raise forms.ValidationError("The request shape is a JSON object, as a run states it.")
        return shape

    def clean(self) -> dict[str, Any] | None:
        d = super().clean() or {}
        peak, sustained = d.get("demand"), d.get("sustained_demand")
        if peak is not None and sustained is not None and sustained > peak:
            self.add_error("sustained_demand", "The sustained demand is at most the peak.")
        return d

    @staticmethod
    def _demand(d: dict[str, Any]) -> dict[str, Any]:
        if d.get("sustained_demand") is None:
            return {"value": d["demand"], "unit": d["demand_unit"]}
        return {"peak": d["demand"], "sustained": d["sustained_demand"], "unit": d["demand_unit"]}


class TrainingDecisionForm(forms.Form):
    """A training question (docs/decisions.md, "Training decisions"): R runs a period, each within a time budget.

    The ranges are protocol.decisions.training's, stated on the page as min/max; the question it builds is the
    API's, so the page and the API refuse and answer alike."""

    phase = forms.CharField(widget=forms.HiddenInput, initial=training.PHASE)
    title = forms.CharField(max_length=200)
    workload = forms.CharField(max_length=200, help_text="e.g. resnet, bert, llama2_70b_lora; or encoder-small")
    workload_version = forms.CharField(
        required=False, max_length=200, label="Workload version (optional, e.g. mlperf-training-v4.0)"
    )
    runs = forms.IntegerField(min_value=1, max_value=int(training.MAX_RUNS), label="Training runs to complete")
    period_hours = forms.FloatField(
        min_value=training.PERIOD_HOURS[0], max_value=training.PERIOD_HOURS[1], label="… every (hours)", initial=720
    )
    time_budget_hours = forms.FloatField(
        min_value=0.001, max_value=training.MAX_BUDGET_HOURS, label="Time budget per run (hours)"
    )
    availability = forms.FloatField(
        required=False,
        min_value=0.01,
        max_value=training.AVAILABILITY[1],
        label="Availability (share of the period a system trains; empty: 1)",
    )
    redundancy = forms.IntegerField(
        required=False, min_value=0, max_value=dec.MAX_REDUNDANCY, label="Spare systems (the k of N+k)"
    )
    prices = forms.CharField(
        required=False,
        max_length=4000,
        label=PRICES_LABEL,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=PRICES_HELP,
    )
    energy_per_kwh = forms.FloatField(
        required=False, min_value=0, max_value=dec.MAX_ENERGY_PRICE_KWH, label="Energy price per kWh"
    )
    webhook_url = forms.URLField(required=False, max_length=500, assume_scheme="https", label="Webhook URL (optional)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", "training")
        super().__init__(*args, **kwargs)

    def clean_prices(self) -> dict[str, float]:
        return parse_hourly_prices(self.cleaned_data.get("prices", ""))

    def question(self) -> dict[str, Any]:
        d = self.cleaned_data
        prices: dict[str, Any] = {}
        if d.get("prices"):
            prices["system_hour"] = dict(d["prices"])
        if d.get("energy_per_kwh") is not None:
            prices["energy_per_kwh"] = d["energy_per_kwh"]
        optional = {
            key: d[key] for key in ("availability", "redundancy") if d.get(key) is not None and d.get(key) != ""
        }
        return {
            "phase": training.PHASE,
            "workload": d["workload"].strip(),
            **(
                {"workload_version": d["workload_version"].strip()} if (d.get("workload_version") or "").strip() else {}
            ),
            "demand": {"runs": d["runs"], "period_hours": d["period_hours"]},
            "time_budget_hours": d["time_budget_hours"],
            **optional,
            "prices": prices,
        }


class GapPlanForm(forms.Form):
    """Measure a missing or weak candidate: which live agents run it, and how many times (3: what an interval needs)."""

    candidate = forms.CharField(max_length=500, widget=forms.HiddenInput)
    agents = RowChoiceField(queryset=Agent.objects.none(), widget=forms.CheckboxSelectMultiple)
    repetitions = forms.IntegerField(min_value=3, max_value=50, initial=3)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Names only: an agent's inventory, host and addresses stay behind AGENT_READ.
        agents = cast(RowChoiceField, self.fields["agents"])
        agents.queryset = Agent.objects.filter(revoked_at__isnull=True).order_by("name")
        # Django's way to relabel one field's choices; the stubs type it as a method, so not assignable.
        agents.label_from_instance = lambda agent: agent.name  # type: ignore[method-assign,assignment]


def _no_constant(name: str) -> None:
    """NaN and Infinity are not JSON: a shape holding one is refused, never read as a number."""
    raise ValueError(f"{name} is not JSON")
