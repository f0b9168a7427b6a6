"""TLS, authentication and authorization, configured with Apache Pulsar's key names.

The connection and the admin app only ask this package questions (who is this peer, may this
role do that); the answers, the providers and the permission rules live here.
"""
