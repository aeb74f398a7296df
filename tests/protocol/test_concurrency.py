"""Shared contracts, bindings and registries under concurrent use (tasks and threads)."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from pydantic import BaseModel

from scope_tool import (
    DuplicateToolError,
    Func,
    InvalidInvocationError,
    Registry,
    Request,
    bind,
)


class AddInput(BaseModel):
    a: int
    b: int


async def add(value: AddInput) -> int:
    await asyncio.sleep(0)  # interleave the tasks
    return value.a + value.b


def blocking_add(value: AddInput) -> int:
    return value.a + value.b


async def test_many_tasks_prepare_and_call_one_binding():
    binding = bind(Func(add, name="add"))

    async def one(index: int) -> str | None:
        invocation = binding.contract.prepare(
            Request(name="add", arguments=f'{{"a":{index},"b":{index}}}')
        )
        return (await binding.call(invocation)).output.text()

    results = await asyncio.gather(*(one(index) for index in range(500)))
    assert results == [str(2 * index) for index in range(500)]


async def test_many_tasks_calling_a_sync_func_share_the_thread_pool():
    binding = bind(Func(blocking_add, name="add"))

    async def one(index: int) -> str | None:
        invocation = binding.contract.prepare(
            Request(name="add", arguments=f'{{"a":{index},"b":1}}')
        )
        return (await binding.call(invocation)).output.text()

    results = await asyncio.gather(*(one(index) for index in range(200)))
    assert results == [str(index + 1) for index in range(200)]


def test_many_threads_prepare_on_one_contract():
    contract = bind(Func(add, name="add")).contract
    barrier = threading.Barrier(8)

    def worker(offset: int) -> list[bytes]:
        barrier.wait()
        admitted = []
        for index in range(200):
            arguments = f'{{"a":{offset},"b":{index}}}'
            admitted.append(contract.prepare(Request(name="add", arguments=arguments)).arguments)
            with pytest.raises(InvalidInvocationError):
                contract.prepare(Request(name="add", arguments=f'{{"a":{offset}}}'))
        return admitted

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(worker, range(8)))
    for offset, admitted in enumerate(outcomes):
        assert admitted == [f'{{"a":{offset},"b":{index}}}'.encode() for index in range(200)]


def test_many_threads_call_one_binding_on_their_own_loops():
    binding = bind(Func(add, name="add"))

    def worker(offset: int) -> list[str | None]:
        async def run() -> list[str | None]:
            texts = []
            for index in range(50):
                invocation = binding.contract.prepare(
                    Request(name="add", arguments=f'{{"a":{offset},"b":{index}}}')
                )
                texts.append((await binding.call(invocation)).output.text())
            return texts

        return asyncio.run(run())

    with ThreadPoolExecutor(max_workers=6) as pool:
        outcomes = list(pool.map(worker, range(6)))
    for offset, texts in enumerate(outcomes):
        assert texts == [str(offset + index) for index in range(50)]


def test_concurrent_registration_of_the_same_names_registers_each_once():
    registry = Registry()
    barrier = threading.Barrier(8)
    names = [f"tool_{index}" for index in range(20)]

    def worker(_: int) -> tuple[int, int]:
        barrier.wait()
        won = lost = 0
        for name in names:
            try:
                registry.register(Func(add, name=name))
                won += 1
            except DuplicateToolError:
                lost += 1
        return won, lost

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(worker, range(8)))
    assert sum(won for won, _ in outcomes) == len(names)
    assert sum(lost for _, lost in outcomes) == len(names) * 7
    assert [definition.name for definition in registry.definitions()] == sorted(names)


def test_concurrent_overlapping_batches_are_atomic():
    # Every batch shares "common"; exactly one batch can win, and only its tools appear.
    registry = Registry()
    barrier = threading.Barrier(6)

    def worker(index: int) -> bool:
        barrier.wait()
        try:
            registry.register(Func(add, name="common"), Func(add, name=f"own_{index}"))
        except DuplicateToolError:
            return False
        return True

    with ThreadPoolExecutor(max_workers=6) as pool:
        winners = [index for index, won in enumerate(pool.map(worker, range(6))) if won]
    assert len(winners) == 1
    assert [d.name for d in registry.definitions()] == ["common", f"own_{winners[0]}"]


def test_readers_see_whole_batches_while_writers_register():
    registry = Registry()
    stop = threading.Event()
    torn: list[list[str]] = []

    def reader() -> None:
        while not stop.is_set():
            names = [definition.name for definition in registry.definitions()]
            # batches are (left_i, right_i): a snapshot never holds one without the other
            lefts = {name[5:] for name in names if name.startswith("left_")}
            rights = {name[6:] for name in names if name.startswith("right")}
            if lefts != rights:
                torn.append(names)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for thread in threads:
        thread.start()
    try:
        for index in range(100):
            registry.register(Func(add, name=f"left_{index}"), Func(add, name=f"right_{index}"))
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert torn == []
    assert len(registry) == 200
