"""Every page of Stateroom, above the domain apps (pretalx's "orga" app is the model).

`views/<resource>.py` holds a resource's pages, `forms/<resource>.py` their
forms, `selectors/<resource>.py` the query logic of the longer views, and
`templates/console/<resource>/` their templates. The domain apps keep their
models, stores, API and jobs and serve no page; a page reads and acts
through their stores and actions and writes nothing itself.
`console_app.urls` is the only page URL map.
"""
