"""The web console: pages over what the broker already serves.

A few static files of our own (an HTML shell, a stylesheet and small ES modules, shipped as
package data, no build step) are served on the web port at / and /console/...; their JavaScript
reads and changes the broker through the admin REST API of the same origin, so authentication
and authorization are the admin API's, with nothing duplicated. The only data the console serves
itself is the brokers' load (/console/api/brokers), which a browser cannot ask other brokers of a
cluster for; it is an ordinary authenticated route (super users only, as /admin/v2/brokers).
"""

from .routes import BrokerLoads, console_routes, is_console_file

__all__ = ["BrokerLoads", "console_routes", "is_console_file"]
