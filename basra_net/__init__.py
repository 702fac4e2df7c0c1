"""basra-net: Egyptian Basra over a LAN with a verifiable deal."""

__version__ = "0.1.0"
