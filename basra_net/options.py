"""The choices and defaults the `basra` commands offer, owned here and read by the modules that use them.

A leaf: it imports nothing, so the command line can build its parser (and
`basra --help` answer) without loading the engine, trio or the network, and
keeps no copies of names that live elsewhere.
"""

SCORING_PRESETS = ("egyptian", "classic")  # the engine's presets, by name (engine/scoring.py)
DEFAULT_SCORING = "egyptian"
BOT_LEVELS = ("search", "greedy", "beginner", "random")  # strongest first (engine/bots.py, LEVELS)
DEFAULT_BOT = "search"
DEFAULT_PORT = 5252
GRACE = 120.0  # seconds a seat whose connection dropped is held for it
# What `--deal` offers (PROTOCOL.md 15.15): hidden hands, taken whenever the other side offers them too (else
# the commit-reveal deal), or the commit-reveal deal alone.
DEAL_CHOICES = ("hidden", "commit-reveal")
DEFAULT_DEAL = "hidden"
