from typing import Any
import time
from conftest import Kube
from test_e2e_operator import pod, profile


def test_huge(kube: Kube, start_operator: Any) -> None:
    kube.add_node("hw-1")
    op = start_operator()
    kube.apply(profile("huge-s", {"profiles": [{"schedulerName": "huge-s"}]}))
    p = pod("huge", "huge-s")
    p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1e18"}}
    kube.apply(p)
    time.sleep(8)
    print(kube.get("pod", "huge")["spec"]["containers"][0]["resources"])
    print(kube.events_for("Pod", "huge"))
    print(op.output()[-5000:])
    assert False
