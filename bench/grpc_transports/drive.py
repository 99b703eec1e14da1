"""One gRPC transport design under load: C greenlets in a closed loop for D seconds.

`python -m bench.grpc_transports.drive --design wire-user --concurrency 4 --duration 8 --address 127.0.0.1:8001`
prints one JSON line: requests, throughput, p50/p99 in µs, this process's CPU µs per request
(children included, for designs that use a helper process). Like a Locust user, each
greenlet times only the call, around a request built before the loop.
"""

from __future__ import annotations

from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import gevent  # noqa: E402
import numpy as np  # noqa: E402
import psutil  # noqa: E402
from tritonclient.grpc import service_pb2  # noqa: E402

from bench.grpc_transports import designs  # noqa: E402

MODEL = "identity"


def identity_request() -> bytes:
    request = service_pb2.ModelInferRequest(model_name=MODEL)
    tensor = request.inputs.add()
    tensor.name, tensor.datatype = "INPUT0", "FP32"
    tensor.shape.extend([1, 16])
    request.raw_input_contents.append(np.random.default_rng(0).random((1, 16), dtype=np.float32).tobytes())
    request.outputs.add().name = "OUTPUT0"
    return request.SerializeToString()


def cpu_s() -> float:
    """This process's CPU time and its live children's (design `sender`'s helper process)."""
    me = psutil.Process()
    return sum(sum(p.cpu_times()[:2]) for p in [me, *me.children(recursive=True)])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--design", choices=sorted(designs.DESIGNS), required=True)
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--address", required=True)
    args = parser.parse_args()

    message = identity_request()
    transport = designs.DESIGNS[args.design](args.address)
    callers = [transport.caller(message) for _ in range(args.concurrency)]
    for call in callers:
        call()  # connect and warm before timing
    latencies: list[int] = []
    state = {"measuring": False, "stop": False}

    def user(call) -> None:
        clock = time.perf_counter_ns
        while not state["stop"]:
            start = clock()
            call()
            if state["measuring"]:
                latencies.append(clock() - start)

    greenlets = [gevent.spawn(user, call) for call in callers]
    gevent.sleep(args.warmup)
    cpu_before, wall_before = cpu_s(), time.perf_counter()
    state["measuring"] = True
    gevent.sleep(args.duration)
    state["measuring"] = False
    cpu, wall = cpu_s() - cpu_before, time.perf_counter() - wall_before
    count = len(latencies)
    state["stop"] = True
    gevent.joinall(greenlets, timeout=5)
    transport.close()
    ordered = np.sort(np.array(latencies))
    print(
        json.dumps(
            {
                "design": args.design,
                "concurrency": args.concurrency,
                "requests": count,
                "infer_per_s": count / wall,
                "p50_us": float(ordered[count // 2]) / 1e3,
                "p99_us": float(ordered[int(count * 0.99)]) / 1e3,
                "cpu_per_request_us": cpu * 1e6 / count,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
