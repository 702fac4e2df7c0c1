"""The exit statuses of every `basra` command, in one place (README.md, PROTOCOL.md 11.5).

A leaf: it imports nothing, so the command line, the join, the host and the
verifier agree on what a status means without loading one another.
"""

EXIT_OK = 0  # the match played to its end, every deal verified; a record proven
EXIT_FAILURE = 1  # a network or protocol failure, an abandoned match, a check that failed, a crash
EXIT_USAGE = 2  # the arguments cannot be used
EXIT_UNREADABLE = 2  # `basra verify` and `basra replay`: the file cannot be read as a transcript
EXIT_CHEAT = 3  # a cheat caught: a deal failing its check, a host walking away from a fixed deal, a record proving who cheated
EXIT_NO_HIDDEN_HANDS = 4  # `basra join`: the table would not deal hidden hands, and the player did not accept the commit-reveal deal
EXIT_LEFT = 130  # the player chose to leave (Ctrl-C or quit), as shells report an interrupt
EXIT_BROKEN_PIPE = 141  # the reader of our output went away (`| head`), as shells report SIGPIPE
