module github.com/pulsard/compat_tests/go

go 1.26.8

require github.com/apache/pulsar-client-go v0.19.0 // indirect
