"""The gRPC client's header decoder, which remembers blocks of indexed fields only, against hpack's own decoder:
the same headers for every block of a random conversation (literals that grow and evict the table, repeats)."""

from __future__ import annotations

import hpack
from hypothesis import given
from hypothesis import strategies as st

from tinykube.store.grpc import HeaderDecoder

names = st.sampled_from([b":status", b"content-type", b"grpc-status", b"grpc-message", b"x-a", b"x-b"])
values = st.sampled_from([b"200", b"application/grpc", b"0", b"", b"13", b"v" * 40, b"w" * 200])
blocks = st.lists(st.lists(st.tuples(names, values), min_size=1, max_size=4), max_size=30)


@given(blocks, st.integers(min_value=0, max_value=4096))
def test_the_memo_decodes_as_hpack_does(conversation: list[list[tuple[bytes, bytes]]], table_size: int) -> None:
    encoder = hpack.Encoder()
    encoder.header_table_size = table_size  # small tables evict: indices then mean other entries
    plain, memo = hpack.Decoder(), HeaderDecoder()
    for headers in conversation * 2:  # the second time round, the blocks are mostly indexed ones
        block = encoder.encode(headers)
        assert memo.decode(block) == dict(plain.decode(block, raw=True))


def test_a_repeated_indexed_block_is_remembered() -> None:
    encoder, memo = hpack.Encoder(), HeaderDecoder()
    headers = [(b":status", b"200"), (b"content-type", b"application/grpc")]
    memo.decode(encoder.encode(headers))  # literals: they enter the table
    indexed = encoder.encode(headers)
    assert all(byte >= 0x80 for byte in indexed)
    assert memo.decode(indexed) == dict(headers) and indexed in memo.indexed
