"""`basra conformance`: checks another implementation against PROTOCOL.md, case by case.

In the manner of h2spec, each case drives a peer into one situation the
specification describes, judges what the peer does only by what crosses the
wire (and, for a client the checker runs itself, by its exit status), and
names the section it tests.  `host_check` plays a client against a host;
`client_check` runs a host for a client to join.
"""
