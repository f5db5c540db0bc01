"""A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, native backend, default
configuration: one stream, no expandable segments, no garbage-collection threshold).

Fed with the step's storage allocations and frees in order, it gives what `torch.cuda.memory_allocated()`
(block sizes after rounding) and `memory_reserved()` (segments obtained from cudaMalloc) would read, and
their maxima. Pure Python, no torch: unit-tested against hand-computed cases.

Constants and rules, as in CUDACachingAllocator.cpp (pytorch main, read 2026-12; unchanged since 2.0):
- kMinBlockSize = 512: every request is rounded up to a multiple of 512 bytes (`round_size`), at least 512.
- kSmallSize = 1 MiB: requests <= 1 MiB use the small pool, larger ones the large pool (`get_pool`).
- kSmallBuffer = 2 MiB: a new small-pool segment is 2 MiB (`get_allocation_size`).
- kMinLargeAlloc = 10 MiB, kLargeBuffer = 20 MiB: a large request < 10 MiB gets a 20 MiB segment.
- kRoundLarge = 2 MiB: larger requests get a segment of their size rounded up to 2 MiB.
- Best fit (`get_free_block`): the smallest cached free block of the pool with size >= the request (ties:
  lowest address). With `max_split_size` set, a request below it never takes a block of at least that
  size, and a request at or above it takes a block only if it is < request + 20 MiB.
- Split (`should_split`): small pool when the remainder is >= 512 bytes; large pool when the request is
  below max_split_size and the remainder is > 1 MiB. An unsplit block counts whole in memory_allocated.
- Free (`free_block`): the block returns to its pool and merges with free neighbours of its segment;
  segments stay reserved (cached) until empty_cache() or an out-of-memory retry, which releases every
  segment that is entirely free (`release_cached_blocks`) and tries cudaMalloc again.
Not modelled: several streams (a block freed on another stream waits for its events), expandable segments,
`roundup_power2_divisions`, CUDA graphs' private pools, the garbage-collection threshold.
"""
from bisect import bisect_left, insort
from typing import Optional

MIN_BLOCK_SIZE = 512
SMALL_SIZE = 1024 * 1024
SMALL_BUFFER = 2 * 1024 * 1024
MIN_LARGE_ALLOC = 10 * 1024 * 1024
LARGE_BUFFER = 20 * 1024 * 1024
ROUND_LARGE = 2 * 1024 * 1024
UNLIMITED = float("inf")


def round_size(size):
    if size < MIN_BLOCK_SIZE:
        return MIN_BLOCK_SIZE
    return MIN_BLOCK_SIZE * ((size + MIN_BLOCK_SIZE - 1) // MIN_BLOCK_SIZE)


def allocation_size(size):
    """Size of the segment cudaMalloc'd for a (rounded) request no cached block can serve."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return ROUND_LARGE * ((size + ROUND_LARGE - 1) // ROUND_LARGE)


class OutOfMemory(Exception):
    pass


class _Block:
    __slots__ = ("size", "addr", "small", "prev", "next", "allocated")

    def __init__(self, size, addr, small):
        self.size = size
        self.addr = addr
        self.small = small
        self.prev: "Optional[_Block]" = None
        self.next: "Optional[_Block]" = None
        self.allocated = False

    def key(self):
        return (self.size, self.addr)


class CachingAllocatorModel:
    def __init__(self, max_split_size=None, capacity=None):
        self.max_split = max_split_size if max_split_size else UNLIMITED
        self.capacity = capacity  # device bytes available to the allocator; None: unlimited
        self.pools = {True: [], False: []}  # small? -> sorted [(size, addr, block)]
        self.blocks = {}  # key -> allocated block
        self.next_addr = 0
        self.allocated = 0
        self.reserved = 0
        self.max_allocated = 0
        self.max_reserved = 0
        self.requested = 0
        self.segments = 0
        self.num_alloc_retries = 0
        self.ooms = 0

    # ------------------------------------------------------------ public

    def malloc(self, key, nbytes):
        """Allocates a storage of `nbytes` under `key`; returns the block size charged to memory_allocated."""
        size = round_size(nbytes)
        small = size <= SMALL_SIZE
        block = self._free_block(size, small)
        if block is None:
            block = self._new_segment(size, small)
        if self._should_split(block, size):
            rest = _Block(block.size - size, block.addr + size, small)
            rest.prev, rest.next = block, block.next
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = size
            insort(self.pools[small], (rest.size, rest.addr, rest))
        block.allocated = True
        self.blocks[key] = (block, nbytes)
        self.allocated += block.size
        self.requested += nbytes
        if self.allocated > self.max_allocated:
            self.max_allocated = self.allocated
        return block.size

    def free(self, key):
        entry = self.blocks.pop(key, None)
        if entry is None:
            return
        block, nbytes = entry
        block.allocated = False
        self.allocated -= block.size
        self.requested -= nbytes
        pool = self.pools[block.small]
        for neighbour in (block.prev, block.next):
            if neighbour is not None and not neighbour.allocated:
                self._remove(pool, neighbour)
                if neighbour is block.prev:
                    block.addr = neighbour.addr
                    block.prev = neighbour.prev
                    if block.prev is not None:
                        block.prev.next = block
                else:
                    block.next = neighbour.next
                    if block.next is not None:
                        block.next.prev = block
                block.size += neighbour.size
        insort(pool, (block.size, block.addr, block))

    def resize(self, key, nbytes):
        """`resize_` to a larger size allocates a new block and frees the old one afterwards."""
        self.malloc(("resize", key), nbytes)
        self.free(key)
        self.blocks[key] = self.blocks.pop(("resize", key))

    def empty_cache(self):
        """Releases every cached segment that is entirely free (torch.cuda.empty_cache())."""
        for small in (True, False):
            pool = self.pools[small]
            keep = []
            for entry in pool:
                block = entry[2]
                if block.prev is None and block.next is None:
                    self.reserved -= block.size
                    self.segments -= 1
                else:
                    keep.append(entry)
            self.pools[small] = keep

    def stats(self):
        return {"allocatedBytes": self.allocated, "reservedBytes": self.reserved,
                "maxAllocatedBytes": self.max_allocated, "maxReservedBytes": self.max_reserved,
                "requestedBytes": self.requested, "segments": self.segments,
                "allocRetries": self.num_alloc_retries, "ooms": self.ooms}

    # ------------------------------------------------------------ internals

    def _should_split(self, block, size):
        remaining = block.size - size
        if block.small:
            return remaining >= MIN_BLOCK_SIZE
        return size < self.max_split and remaining > SMALL_SIZE

    def _free_block(self, size, small):
        pool = self.pools[small]
        i = bisect_left(pool, (size, -1))
        if i == len(pool):
            return None
        block = pool[i][2]
        if size < self.max_split and block.size >= self.max_split:
            return None
        if size >= self.max_split and block.size >= size + LARGE_BUFFER:
            return None
        del pool[i]
        return block

    def _new_segment(self, size, small):
        alloc = allocation_size(size)
        if self.capacity is not None and self.reserved + alloc > self.capacity:
            # The allocator frees cached unsplit blocks and retries cudaMalloc before failing.
            self.num_alloc_retries += 1
            self.empty_cache()
            block = self._free_block(size, small)
            if block is not None:
                return block
            if self.reserved + alloc > self.capacity:
                self.ooms += 1
                raise OutOfMemory("CUDA out of memory (predicted): tried to allocate %d bytes with %d reserved "
                                  "of %d" % (alloc, self.reserved, self.capacity))
        block = _Block(alloc, self.next_addr, small)
        self.next_addr += alloc
        self.reserved += alloc
        self.segments += 1
        if self.reserved > self.max_reserved:
            self.max_reserved = self.reserved
        return block

    @staticmethod
    def _remove(pool, block):
        i = bisect_left(pool, (block.size, block.addr))
        if i < len(pool) and pool[i][2] is block:
            del pool[i]
            return
        for j, entry in enumerate(pool):  # defensive: never expected
            if entry[2] is block:
                del pool[j]
                return
