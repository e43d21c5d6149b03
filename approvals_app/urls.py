"""Console pages of approvals_app, mounted under /t/<tenant_slug>/approvals/ by console_app.urls
(which adds the approval page and the decision to the namespace)."""

from django.urls import path

from . import views

app_name = "approvals"
urlpatterns = [
    path("", views.inbox, name="inbox"),
    path("history/", views.history, name="history"),
    path("history.csv", views.history_export, name="history-export"),
]
