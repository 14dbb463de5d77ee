"""Short variant of the policy mutation check (the full one is `make mutation`): two policies from different
areas, each broken in a copy of the template, must make the suite fail. It runs what `make mutation` runs: the
sweep (the tenant-world test once against the intact schema, which must pass, and once per broken policy), then
the whole suite for a mutation the sweep did not catch."""

from __future__ import annotations

import policy_mutation


def test_broken_policies_are_caught_by_behavioural_tests():
    # One job: the sweep of both mutations is one pytest process with one embedded cluster.
    outcomes = policy_mutation.check(["weaken:packet_store.org_isolation", "drop:memory_embeddings.user_visibility"],
                                     jobs=1)
    assert [(o.mutation, o.caught) for o in outcomes] == [(o.mutation, True) for o in outcomes], \
        [o.detail for o in outcomes]
