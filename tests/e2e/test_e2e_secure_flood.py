"""Strangers at the secure port while a backlog binds: 2,000 anonymous requests to random
paths and 2,000 random bearer tokens cost the API server at most the capped reviews (the
audit log counts the operator's TokenReviews and SubjectAccessReviews), and every pod of the
backlog is bound meanwhile."""

from __future__ import annotations

import asyncio
import time
import uuid

from harness import profile_body
from test_e2e_faults import burst, keys_of, no_problems

from conftest import FaultCluster, report_figure
from multisched.operator.secure import REVIEW_BURST, REVIEW_RATE_PER_SECOND
from strangers import flood

REVIEWS = ("tokenreviews", "subjectaccessreviews")


def test_a_flood_of_strangers_costs_capped_reviews_and_the_backlog_binds(
    faults: FaultCluster,
) -> None:
    fc = faults
    fc.api.create_nodes([f"f-node-{i:02d}" for i in range(20)], cpu="4")
    op = fc.start_operator()
    fc.kube.wait_for("the operator", op.ready, 60)
    url = f"https://127.0.0.1:{op.secure_port}"
    before = len([r for r in fc.audit.read() if r.resource in REVIEWS])
    pods = burst("flood", "flood", 1500, "10m")
    fc.api.create_pods(pods)
    fc.kube.apply(profile_body("flood"))
    fc.wait_bindings(1, keys_of(pods), timeout=60)
    strangers: list[tuple[str, str | None]] = [(f"/{uuid.uuid4().hex}", None)] * 2000
    strangers += [("/metrics", uuid.uuid4().hex) for _ in range(2000)]
    started = time.time()  # the audit log's clock
    answers = asyncio.run(flood(url, strangers))
    elapsed = time.time() - started
    verdict = fc.check(keys_of(pods), [op])
    records = fc.audit.read()
    reviews = [r for r in records if r.resource in REVIEWS][before:]
    during = [r for r in fc.audit.bindings() if r.ok and started <= r.time <= started + elapsed]
    report_figure(
        f"[secure flood] 4,000 strangers in {elapsed:.1f}s: answers {dict(answers)}, "
        f"{len(reviews)} reviews, {len(during)} bindings meanwhile, all 1,500 bound in "
        f"{verdict.bound_after_s and round(verdict.bound_after_s, 1)}s"
    )
    # Random paths are 404 before any review; random tokens beyond the caps are 429.
    assert answers[404] == 2000
    assert answers[401] + answers[429] == 2000
    cap = REVIEW_BURST + REVIEW_RATE_PER_SECOND * (elapsed + 1)
    assert len(reviews) <= cap, (len(reviews), cap)
    assert answers[401] <= cap
    assert during, "no binding while the strangers were served"
    no_problems(verdict.problems)
