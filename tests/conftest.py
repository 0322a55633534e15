"""Shared fixtures and hypothesis profiles.

One environment variable picks the hypothesis profile, `HEALJSON_HYPOTHESIS_PROFILE`: the one
healjson's pytest plugin reads for users (`_healjson_pytestplugin.PROFILE_ENV`).
`HEALJSON_HYPOTHESIS_PROFILE=healjson-thorough` runs many more examples (1000 per property);
unset, the suite runs its fast default, `ci` (60 examples), which CI uses.
"""

from __future__ import annotations

import os

from hypothesis import settings

from _healjson_pytestplugin import PROFILE_ENV

settings.register_profile("ci", max_examples=60, deadline=None)
if not os.environ.get(PROFILE_ENV, "").strip():  # otherwise the plugin loads the one named
    settings.load_profile("ci")
