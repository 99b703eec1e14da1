"""Every user of a run draws its own stream: workers must not repeat each other's users.

Each user's `random.Random` (batch sizes, mix picks) is seeded by the process. Seeded by the
user's number alone, the first user of every worker drew the same sequence as the first user
of every other worker."""

from __future__ import annotations

import random

from locust import User
from locust.env import Environment

from loadtests.run.process import SuiteProcess, user_seed


class Idle(User):
    pass


def first_draws(seed: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.random() for _ in range(8)]


def test_seeds_are_disjoint_across_workers_and_users():
    seeds = {user_seed(worker, number) for worker in range(50) for number in range(1, 200)}
    assert len(seeds) == 50 * 199


def test_a_single_process_keeps_its_seeds():
    # Runs without workers draw what they drew before: 1, 2, 3, ... (and a worker before the
    # master numbers it, index -1, counts as worker 0).
    assert [user_seed(0, n) for n in (1, 2, 3)] == [1, 2, 3]
    assert user_seed(-1, 5) == 5


def test_each_worker_process_seeds_its_users_differently():
    streams = []
    for worker_index in (0, 1, 2):
        environment = Environment(user_classes=[Idle])
        runner = environment.create_local_runner()
        runner.worker_index = worker_index  # what Locust's WorkerRunner carries once the master numbers it
        process = SuiteProcess(environment)
        streams.append(first_draws(process.next_user_seed()))
        runner.quit()
    assert streams[0] != streams[1] != streams[2] != streams[0]
