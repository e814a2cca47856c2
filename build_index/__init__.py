"""toolrec's offline side: model preparation, catalog validation and linting, index builds, evaluation."""
