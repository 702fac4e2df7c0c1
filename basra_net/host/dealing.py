"""The commit-reveal deal of each game, the host's side (PROTOCOL.md, section 9).

For each game the host draws a seed, has it on disk (with a journal) before
it commits to it, sends seat 1 the signed commitment, takes seat 1's seed,
deals from the deck both seeds fix, and after the game reveals its seed,
signed.  ``Dealer`` keeps where the deal stands, which a resumed seat 1 is
handed, and whether a game committed to still owes its reveal.
"""

from __future__ import annotations

from typing import Any, Callable

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..protocol import shuffle
from ..protocol.messages import Commit, Reveal, Seed
from .replay import HOST_SEED, JournalMismatch, JournalReplay


class Dealer:
    def __init__(self, identity: Ed25519PrivateKey, match_id: bytes, make_seed: Callable[[], bytes], replay: JournalReplay) -> None:
        self._identity = identity
        self._match_id = match_id
        self._make_seed = make_seed
        self._replay = replay
        self.committed: tuple[int, bytes] | None = None  # (game, host seed) once its commitment is made, until revealed
        self.awaiting_seed: int | None = None  # the game whose commitment awaits seat 1's seed
        self.seed_taken: Seed | None = None

    def host_seed(self, game: int) -> bytes:
        """A fresh seed, on disk before its commitment goes out; a replayed journal gives back the one it has."""
        replayed = self._replay.next()
        if replayed is not None:
            sender, record = replayed
            if sender != HOST_SEED or record.get("game") != game:
                raise JournalMismatch(f"the journal lacks the host seed of game {game}")
            return record["seed"]
        seed = self._make_seed()
        self._replay.write({"type": "host_seed", "game": game, "seed": seed})
        return seed

    def commit(self, game: int, host_seed: bytes, guest_nonce: bytes) -> Commit:
        commitment = shuffle.commitment(self._match_id, game, guest_nonce, host_seed)
        signature = shuffle.sign(self._identity, shuffle.commit_signed_bytes(self._match_id, game, commitment))
        self.awaiting_seed = game
        self.committed = (game, host_seed)
        return Commit(game, commitment, signature)

    def seed_in(self, game: int, seed: Seed) -> None:
        """Seat 1's seed is taken: the deck is fixed."""
        self._replay.write({"type": "seed", "game": game, "seed": seed.seed})
        self.awaiting_seed, self.seed_taken = None, seed

    def reveal(self, game: int, host_seed: bytes) -> Reveal:
        signature = shuffle.sign(self._identity, shuffle.reveal_signed_bytes(self._match_id, game, host_seed))
        self.committed = None
        return Reveal(game, host_seed, signature)

    def owed_reveal(self) -> Reveal | None:
        """The reveal of a game cut off after its commitment went out (PROTOCOL.md 7.3).

        Once seat 1's seed is in, it shows the host did not walk away from a fixed deal; before, it costs
        nothing (the deck needs both seeds), and a seed that crossed the match's end is not left unanswered.
        """
        return self.reveal(*self.committed) if self.committed is not None else None

    def resume_state(self) -> dict[str, Any]:
        """Where the deal stands, for a connection that resumes seat 1."""
        return {"awaiting_seed": self.awaiting_seed, "seed_taken": self.seed_taken}
