"""The console's page (PRODUCT.md §8): plain HTML, CSS and JavaScript in ``static/``, served by
handler/api/routes/console.py. No build step and nothing fetched from outside: the files are the page."""
