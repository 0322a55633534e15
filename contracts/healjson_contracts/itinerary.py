"""Itineraries: rules that span a nested list of legs.

A trip is a list of legs. Each leg arrives after it departs; consecutive legs chain in place
(a leg starts where the previous one ended) and in time (at least 30 minutes to connect); and the
trip's declared `start` and `end` are the first origin and the last destination. Times carry a
UTC offset (`2024-05-01T09:30:00+02:00`) so legs across time zones compare correctly; city names
compare ignoring case and surrounding spaces.

Load it from anywhere with `healjson.load_contracts("itinerary")` (an installed pack's name: an
entry point of the `healjson.contracts` group; the module is `healjson_contracts.itinerary`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from itertools import pairwise
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, Field

from healjson import ContractPack, Violation, contract

__all__ = [
    "MIN_CONNECTION",
    "Itinerary",
    "Leg",
    "endpoints_match",
    "legs_arrive_after_departing",
    "legs_connect_in_place",
    "legs_connect_in_time",
    "pack",
]

MIN_CONNECTION = timedelta(minutes=30)
"""The least time between arriving on one leg and departing on the next."""

_MINUTES = int(MIN_CONNECTION.total_seconds() // 60)


class Leg(BaseModel):
    """One journey from `origin` to `destination`."""

    origin: str = Field(min_length=1)
    destination: str = Field(min_length=1)
    depart: AwareDatetime
    arrive: AwareDatetime
    mode: Literal["flight", "train", "bus", "car", "ferry"]


class Itinerary(BaseModel):
    """A trip from `start` to `end` through its legs, in order."""

    start: str = Field(min_length=1)
    end: str = Field(min_length=1)
    legs: list[Leg] = Field(min_length=1)


def _same_place(a: str, b: str) -> bool:
    return a.strip().casefold() == b.strip().casefold()


def _when(moment: datetime) -> str:
    return moment.isoformat()


def _q(text: str) -> str:
    """A name as JSON writes it: `"Paris"`."""
    return json.dumps(text, ensure_ascii=False)


@contract(fields=("legs",))
def legs_arrive_after_departing(trip: Itinerary) -> Iterator[Violation]:
    """Every leg arrives after it departs."""
    for index, leg in enumerate(trip.legs):
        if leg.arrive > leg.depart:
            continue
        at = f"legs[{index}]"
        yield Violation(
            f"{at}.arrive ({_when(leg.arrive)}) must be later than {at}.depart "
            f"({_when(leg.depart)})",
            fields=(f"{at}.arrive", f"{at}.depart"),
            prescription=(
                f"Set `{at}.arrive` to a time after {_when(leg.depart)}, or move `{at}.depart` "
                "earlier (check the UTC offsets and the day); either field may change."
            ),
        )


@contract(fields=("legs",))
def legs_connect_in_place(trip: Itinerary) -> Iterator[Violation]:
    """Each leg starts where the previous leg ended."""
    for index, (before, after) in enumerate(pairwise(trip.legs)):
        if _same_place(before.destination, after.origin):
            continue
        first, second = f"legs[{index}].destination", f"legs[{index + 1}].origin"
        yield Violation(
            f"legs chain in place: {second} ({_q(after.origin)}) must equal {first} "
            f"({_q(before.destination)})",
            fields=(second, first),
            prescription=(
                f"Set `{second}` to {_q(before.destination)}, or `{first}` to {_q(after.origin)}, "
                "whichever was misread — or add the missing leg between them; either field "
                "may change."
            ),
        )


@contract(fields=("legs",))
def legs_connect_in_time(trip: Itinerary) -> Iterator[Violation]:
    """Each leg departs at least 30 minutes after the previous leg arrives."""
    for index, (before, after) in enumerate(pairwise(trip.legs)):
        earliest = before.arrive + MIN_CONNECTION
        if after.depart >= earliest:
            continue
        arrived, departs = f"legs[{index}].arrive", f"legs[{index + 1}].depart"
        yield Violation(
            f"legs chain in time: {departs} ({_when(after.depart)}) must be at least "
            f"{_MINUTES} minutes after {arrived} ({_when(before.arrive)}), i.e. no earlier "
            f"than {_when(earliest)}",
            fields=(departs, arrived),
            prescription=(
                f"Set `{departs}` to {_when(earliest)} or later, or make `{arrived}` earlier "
                "if it was misread (check the UTC offsets); either field may change."
            ),
        )


@contract(fields=("start", "end", "legs"))
def endpoints_match(trip: Itinerary) -> Iterator[Violation]:
    """The trip's start is the first leg's origin and its end the last leg's destination."""
    first = trip.legs[0]
    if not _same_place(trip.start, first.origin):
        yield Violation(
            f"start ({_q(trip.start)}) must equal legs[0].origin ({_q(first.origin)})",
            fields=("start", "legs[0].origin"),
            prescription=(
                f"Set `start` to {_q(first.origin)}, or `legs[0].origin` to {_q(trip.start)} "
                "(or add the missing first leg); either field may change."
            ),
        )
    last_index = len(trip.legs) - 1
    last = trip.legs[last_index]
    if not _same_place(trip.end, last.destination):
        at = f"legs[{last_index}].destination"
        yield Violation(
            f"end ({_q(trip.end)}) must equal {at} ({_q(last.destination)})",
            fields=("end", at),
            prescription=(
                f"Set `end` to {_q(last.destination)}, or `{at}` to {_q(trip.end)} (or add the "
                "missing last leg); either field may change."
            ),
        )


CONTRACTS = (
    legs_arrive_after_departing,
    legs_connect_in_place,
    legs_connect_in_time,
    endpoints_match,
)

EXAMPLES = (
    {
        "start": "Lisbon",
        "end": "Amsterdam",
        "legs": [
            {
                "origin": "Lisbon",
                "destination": "Paris",
                "depart": "2024-05-01T07:10:00+01:00",
                "arrive": "2024-05-01T10:45:00+02:00",
                "mode": "flight",
            },
            {
                "origin": "Paris",
                "destination": "Amsterdam",
                "depart": "2024-05-01T13:25:00+02:00",
                "arrive": "2024-05-01T16:43:00+02:00",
                "mode": "train",
            },
        ],
    },
    {
        "start": "London",
        "end": "Inverness",
        "legs": [
            {
                "origin": "London",
                "destination": "Edinburgh",
                "depart": "2024-08-12T10:00:00+01:00",
                "arrive": "2024-08-12T14:20:00+01:00",
                "mode": "train",
            },
            {
                "origin": "Edinburgh",
                "destination": "Perth",
                "depart": "2024-08-12T15:00:00+01:00",
                "arrive": "2024-08-12T16:30:00+01:00",
                "mode": "bus",
            },
            {
                "origin": "Perth",
                "destination": "Inverness",
                "depart": "2024-08-13T09:00:00+01:00",
                "arrive": "2024-08-13T11:45:00+01:00",
                "mode": "car",
            },
        ],
    },
)


# ---------------------------------------------------------------------------------------------
# hypothesis strategies (hypothesis is imported inside, so loading the pack never needs it); each
# is built once (`functools.cache`): hypothesis validates a strategy the first time it is drawn
# from, and a test that calls a factory inside `data.draw` would pay for that on every example
# ---------------------------------------------------------------------------------------------

CITIES = ("Lisbon", "Paris", "Amsterdam", "Berlin", "Vienna", "Rome", "Madrid", "Oslo")
ZONES = (
    UTC,
    timezone(timedelta(hours=1)),
    timezone(timedelta(hours=2)),
    timezone(-timedelta(hours=5)),
)
MODES = ("flight", "train", "bus", "car", "ferry")


def _draw_trip(
    draw: Any, st: Any, *, legs: int | None = None, short_gap: int | None = None
) -> Itinerary:
    """A valid trip built forwards: cities first, then each leg's times from the previous arrival.

    With `short_gap=i`, the connection after leg `i` is too short (every other rule holds).
    """
    count = legs if legs is not None else draw(st.integers(1, 5))
    # consecutive cities differ: step through CITIES by a non-zero offset each time
    city = draw(st.integers(0, len(CITIES) - 1))
    path = [city]
    for _ in range(count):
        city = (city + draw(st.integers(1, len(CITIES) - 1))) % len(CITIES)
        path.append(city)
    start = draw(st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 12, 31)))
    moment = start.replace(second=0, microsecond=0, tzinfo=UTC)
    out = []
    for index in range(count):
        zone = draw(st.sampled_from(ZONES))
        duration = timedelta(minutes=draw(st.integers(15, 14 * 60)))
        depart = moment.astimezone(zone)
        arrive = (moment + duration).astimezone(draw(st.sampled_from(ZONES)))
        out.append(
            Leg(
                origin=CITIES[path[index]],
                destination=CITIES[path[index + 1]],
                depart=depart,
                arrive=arrive,
                mode=draw(st.sampled_from(MODES)),
            )
        )
        if index == short_gap:
            gap = draw(st.integers(-6 * 60, _MINUTES - 1))  # may even overlap the previous leg
        else:
            gap = draw(st.integers(_MINUTES, 24 * 60))
        moment = moment + duration + timedelta(minutes=gap)
    return Itinerary(start=CITIES[path[0]], end=CITIES[path[-1]], legs=out)


def _with_leg(trip: Itinerary, index: int, **update: Any) -> Itinerary:
    legs = list(trip.legs)
    legs[index] = legs[index].model_copy(update=update)
    return trip.model_copy(update={"legs": legs})


def _elsewhere(draw: Any, st: Any, *avoid: str) -> str:
    city: str = draw(
        st.sampled_from([c for c in CITIES if all(not _same_place(c, a) for a in avoid)])
    )
    return city


@functools.cache
def _valid() -> Any:
    """Itineraries that pass the schema and every rule."""
    from hypothesis import strategies as st

    @st.composite
    def trips(draw: Any) -> Itinerary:
        return _draw_trip(draw, st)

    return trips()


@functools.cache
def _breaks_legs_arrive_after_departing() -> Any:
    """One leg arrives at or before its departure; it arrives earlier, so connections hold."""
    from hypothesis import strategies as st

    @st.composite
    def trips(draw: Any) -> Itinerary:
        trip = _draw_trip(draw, st)
        index = draw(st.integers(0, len(trip.legs) - 1))
        back = timedelta(minutes=draw(st.integers(0, 12 * 60)))
        return _with_leg(trip, index, arrive=trip.legs[index].depart - back)

    return trips()


@functools.cache
def _breaks_legs_connect_in_place() -> Any:
    from hypothesis import strategies as st

    @st.composite
    def trips(draw: Any) -> Itinerary:
        trip = _draw_trip(draw, st, legs=draw(st.integers(2, 5)))
        index = draw(st.integers(1, len(trip.legs) - 1))
        leg = trip.legs[index]
        wrong = _elsewhere(draw, st, trip.legs[index - 1].destination, leg.destination)
        return _with_leg(trip, index, origin=wrong)

    return trips()


@functools.cache
def _breaks_legs_connect_in_time() -> Any:
    from hypothesis import strategies as st

    @st.composite
    def trips(draw: Any) -> Itinerary:
        count = draw(st.integers(2, 5))
        return _draw_trip(draw, st, legs=count, short_gap=draw(st.integers(0, count - 2)))

    return trips()


@functools.cache
def _breaks_endpoints_match() -> Any:
    from hypothesis import strategies as st

    @st.composite
    def trips(draw: Any) -> Itinerary:
        trip = _draw_trip(draw, st)
        which = draw(st.sampled_from(("start", "end", "both")))
        update = {}
        if which in ("start", "both"):
            update["start"] = _elsewhere(draw, st, trip.start)
        if which in ("end", "both"):
            update["end"] = _elsewhere(draw, st, trip.end)
        return trip.model_copy(update=update)

    return trips()


pack = ContractPack(
    model=Itinerary,
    contracts=CONTRACTS,
    examples=EXAMPLES,
    name="itinerary",
    description="Multi-leg trips whose legs must chain in place and time and match the declared "
    "start and end.",
    strategies={
        "valid": _valid,
        "legs_arrive_after_departing": _breaks_legs_arrive_after_departing,
        "legs_connect_in_place": _breaks_legs_connect_in_place,
        "legs_connect_in_time": _breaks_legs_connect_in_time,
        "endpoints_match": _breaks_endpoints_match,
    },
)
